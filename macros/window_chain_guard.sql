{% macro window_chain_guard() %}
{#- A select-list item (with its comma) for each CTE of a long chain of
    windows partitioned by columns, such as the k-means' Lloyd steps. DuckDB's
    filter pushdown plans what lies below a partitioned window twice, so a
    chain of n of them costs 2^n (20 steps: over 30 s to plan); an
    unpartitioned window beside them (never read, so pruned) makes it plan
    the chain once. Nothing on Spark. -#}
    {{- return(adapter.dispatch('window_chain_guard', 'obs')()) -}}
{% endmacro %}

{% macro default__window_chain_guard() %}{% endmacro %}

{% macro duckdb__window_chain_guard() -%}
    count(*) over () as window_chain_guard,
{%- endmacro %}
