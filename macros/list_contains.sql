{% macro list_contains(expression, value) %}
{#- Whether a list holds a value (null for a null list). -#}
    {{ return(adapter.dispatch('list_contains', 'obs')(expression, value)) }}
{% endmacro %}

{% macro default__list_contains(expression, value) %}
    array_contains({{ expression }}, {{ value }})
{% endmacro %}

{% macro duckdb__list_contains(expression, value) %}
    list_contains({{ expression }}, {{ value }})
{% endmacro %}
