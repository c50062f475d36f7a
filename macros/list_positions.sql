{% macro list_positions(expression) %}
{#- A select-list item that makes one row per element of a list, holding
    the element's position from 1 (a row whose list is null or empty makes
    none). Read the element with list_element. -#}
    {{ return(adapter.dispatch('list_positions', 'obs')(expression)) }}
{% endmacro %}

{#- Spark: sequence(1, 0) counts down, and size(null) is -1: an empty or
    null list explodes a null, which makes no row. -#}
{% macro default__list_positions(expression) %}
    explode(case when size({{ expression }}) > 0 then sequence(1, size({{ expression }})) end)
{% endmacro %}

{% macro duckdb__list_positions(expression) %}
    unnest(range(1, len({{ expression }}) + 1))
{% endmacro %}
