{% macro map_value(expression, key) %}
{#- The value a map holds under a key; null when the map lacks the key or
    is null. -#}
    {{ return(adapter.dispatch('map_value', 'obs')(expression, key)) }}
{% endmacro %}

{#- Spark: try_element_at, null for a missing key in ANSI mode too. -#}
{% macro default__map_value(expression, key) %}
    try_element_at({{ expression }}, {{ key }})
{% endmacro %}

{% macro duckdb__map_value(expression, key) %}
    {{ expression }}[{{ key }}]
{% endmacro %}
