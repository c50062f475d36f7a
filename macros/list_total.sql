{% macro list_total(list) %}
{#- The sum of a non-empty list of doubles (callers guard the empty list):
    DuckDB's list_sum, one vectorised call; elsewhere a fold. -#}
    {{ return(adapter.dispatch('list_total', 'obs')(list)) }}
{% endmacro %}

{% macro default__list_total(list) %}
    {{ list_fold(list, 'total_a', 'total_b', 'total_a + total_b') }}
{% endmacro %}

{% macro duckdb__list_total(list) %}
    list_sum({{ list }})
{% endmacro %}
