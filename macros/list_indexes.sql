{% macro list_indexes(expression) %}
{#- The list of a non-empty list's positions, 1 to its size, in order: a
    list to map over when the elements of several aligned lists are read
    together (list_element of each at the position). Callers guard the
    empty and the null list. -#}
    {{ return(adapter.dispatch('list_indexes', 'obs')(expression)) }}
{% endmacro %}

{#- Spark: sequence(1, 0) would count down; the caller's guard keeps it out. -#}
{% macro default__list_indexes(expression) %}
    sequence(1, size({{ expression }}))
{% endmacro %}

{% macro duckdb__list_indexes(expression) %}
    range(1, len({{ expression }}) + 1)
{% endmacro %}
