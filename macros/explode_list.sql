{% macro explode_list(expression) %}
{#- A select-list item that makes one row per element of a list, holding
    the element (a row whose list is null or empty makes none). -#}
    {{ return(adapter.dispatch('explode_list', 'obs')(expression)) }}
{% endmacro %}

{% macro default__explode_list(expression) %}
    explode({{ expression }})
{% endmacro %}

{% macro duckdb__explode_list(expression) %}
    unnest({{ expression }})
{% endmacro %}
