{% macro map_value(expression, key) %}
{#- The value a map holds under a key; null when the map lacks the key or
    is null. -#}
    {{ return(adapter.dispatch('map_value', 'obs')(expression, key)) }}
{% endmacro %}

{#- Spark: element_at on a map (outside ANSI mode, null for a missing key). -#}
{% macro default__map_value(expression, key) %}
    element_at({{ expression }}, {{ key }})
{% endmacro %}

{% macro duckdb__map_value(expression, key) %}
    {{ expression }}[{{ key }}]
{% endmacro %}
