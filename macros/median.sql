{% macro median(expression) %}
{#- Aggregate (or window function, with the caller's `filter` or `over`):
    the median of a double, interpolated between the two middle values. -#}
    {{ return(adapter.dispatch('median', 'obs')(expression)) }}
{% endmacro %}

{#- Spark's exact percentile interpolates as DuckDB does, (1 - d) x lo +
    d x hi: the same bits. -#}
{% macro default__median(expression) %}
    percentile({{ expression }}, 0.5)
{% endmacro %}

{% macro duckdb__median(expression) %}
    median({{ expression }})
{% endmacro %}
