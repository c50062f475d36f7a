{% macro least_squares_slope(y, x, over=none) %}
{#- Aggregate, or with `over` (a window name or a parenthesised window) a
    window function: the least-squares slope of y on x over the rows where
    both are non-null, as DuckDB's regr_slope gives it: NaN when x does not
    vary there (a single point: 0 / 0), null with no such row. Spark's
    regr_slope gives null for the former. -#}
    {{ return(adapter.dispatch('least_squares_slope', 'obs')(y, x, over)) }}
{% endmacro %}

{#- regr_sxx is 0 exactly when x does not vary over the pairs (null with none). -#}
{% macro default__least_squares_slope(y, x, over=none) %}
    {%- set window = ' over ' ~ over if over is not none else '' -%}
    case
        when regr_sxx({{ y }}, {{ x }}){{ window }} = 0 then cast('NaN' as double)
        else regr_slope({{ y }}, {{ x }}){{ window }}
    end
{%- endmacro %}

{% macro duckdb__least_squares_slope(y, x, over=none) %}
    regr_slope({{ y }}, {{ x }}){% if over is not none %} over {{ over }}{% endif %}
{%- endmacro %}
