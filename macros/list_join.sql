{% macro list_join(expression, separator) %}
{#- The elements of a list as text, joined by `separator` (SQL text). -#}
    {{ return(adapter.dispatch('list_join', 'obs')(expression, separator)) }}
{% endmacro %}

{% macro default__list_join(expression, separator) %}
    array_join({{ expression }}, {{ separator }})
{% endmacro %}

{% macro duckdb__list_join(expression, separator) %}
    array_to_string({{ expression }}, {{ separator }})
{% endmacro %}
