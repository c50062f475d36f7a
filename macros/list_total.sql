{% macro list_total(list) %}
{#- The sum of a non-empty list of doubles, added one by one in the list's
    order: the same bits on both engines (and as numpy's sum along a
    non-contiguous axis). Callers guard the empty list. -#}
    {{ return(adapter.dispatch('list_total', 'obs')(list)) }}
{% endmacro %}

{% macro default__list_total(list) %}
    {{ list_fold(list, 'total_a', 'total_b', 'total_a + total_b') }}
{% endmacro %}

{#- DuckDB's list_sum adds a double list's elements in order in one state
    (checked against a Python loop by the k-means tests), and runs as one
    vectorised call where list_reduce runs the lambda once per element. -#}
{% macro duckdb__list_total(list) %}
    list_sum({{ list }})
{% endmacro %}
