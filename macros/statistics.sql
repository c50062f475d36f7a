{#- Statistics: arg_max/arg_min, medians, quantiles, the MAD, slopes and
    the binomial tail. -#}

{% macro arg_max(value, by) %}
{#- Aggregate: `value` at the row with the largest `by`, over the rows
    where `value` is not null (rows with a null `by` are skipped). -#}
    {{ return(adapter.dispatch('arg_max', 'obs')(value, by)) }}
{% endmacro %}

{#- As arg_min: ties on `by` go to the largest value. -#}
{% macro default__arg_max(value, by) %}
    max_by({{ value }}, case when {{ value }} is not null then struct({{ by }}, {{ value }}) end)
{% endmacro %}

{% macro duckdb__arg_max(value, by) %}
    arg_max({{ value }}, {{ by }})
{% endmacro %}

{% macro arg_min(value, by) %}
{#- Aggregate: `value` at the row with the smallest `by`, over the rows
    where `value` is not null (rows with a null `by` are skipped). -#}
    {{ return(adapter.dispatch('arg_min', 'obs')(value, by)) }}
{% endmacro %}

{#- Spark's min_by keeps a null value: its row is taken out by a null `by`;
    ties on `by` go to the smallest value, whatever order the rows came in. -#}
{% macro default__arg_min(value, by) %}
    min_by({{ value }}, case when {{ value }} is not null then struct({{ by }}, {{ value }}) end)
{% endmacro %}

{% macro duckdb__arg_min(value, by) %}
    arg_min({{ value }}, {{ by }})
{% endmacro %}

{% macro count_distinct_over(expression, partition_by) %}
{#- The number of distinct non-null values of `expression` in the row's
    window partition (`partition_by`: a list of columns). -#}
    {{ return(adapter.dispatch('count_distinct_over', 'obs')(expression, partition_by)) }}
{% endmacro %}

{#- Spark has no DISTINCT in a window: the size of the set. -#}
{% macro default__count_distinct_over(expression, partition_by) %}
    size(collect_set({{ expression }}) over (partition by {{ partition_by | join(', ') }}))
{% endmacro %}

{% macro duckdb__count_distinct_over(expression, partition_by) %}
    count(distinct {{ expression }}) over (partition by {{ partition_by | join(', ') }})
{% endmacro %}

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

{% macro quantile(expression, fraction) %}
    {% if fraction is not number or fraction < 0 or fraction > 1 %}
        {{ exceptions.raise_compiler_error("quantile: fraction must be a number in [0, 1]") }}
    {% endif %}
    {{ return(adapter.dispatch('quantile', 'obs')(expression, fraction)) }}
{% endmacro %}

{% macro default__quantile(expression, fraction) %}
    percentile_approx({{ expression }}, {{ fraction }})
{% endmacro %}

{% macro duckdb__quantile(expression, fraction) %}
    quantile_cont({{ expression }}, {{ fraction }})
{% endmacro %}

{#- Spark's percentile is exact, with linear interpolation (quantile_cont's). -#}
{% macro spark__quantile(expression, fraction) %}
    percentile({{ expression }}, {{ fraction }})
{% endmacro %}

{% macro mad(expression, filter=none, over=none) %}
{#- Aggregate: the median absolute deviation of a double (the median of the
    distances from the median), over the rows `filter` (an SQL condition)
    keeps, or over the window `over` (a window name or a parenthesised
    window). -#}
    {%- if filter is not none and over is not none -%}
        {{ exceptions.raise_compiler_error("mad: filter or over, not both (no FILTER in a window on Spark)") }}
    {%- endif -%}
    {{ return(adapter.dispatch('mad', 'obs')(expression, filter, over)) }}
{% endmacro %}

{#- Spark has no mad: the values are collected (nulls left out), sorted, and
    the medians taken from the sorted lists with DuckDB's interpolation (an
    even count: lo x 0.5 + hi x 0.5), so both engines give the same bits. -#}
{% macro default__mad(expression, filter, over) %}
    element_at(transform(
        array(array_sort(collect_list({{ expression }})
        {%- if filter is not none %} filter (where {{ filter }}){% endif %}
        {%- if over is not none %} over {{ over }}{% endif %})),
        mad_values -> {{ _sorted_median(
            'array_sort(transform(mad_values, mad_value -> abs(mad_value - '
            ~ _sorted_median('mad_values') ~ ')))'
        ) }}
    ), 1)
{% endmacro %}

{% macro duckdb__mad(expression, filter, over) %}
    mad({{ expression }})
    {%- if filter is not none %} filter (where {{ filter }}){% endif %}
    {%- if over is not none %} over {{ over }}{% endif %}
{% endmacro %}

{% macro _sorted_median(sorted_list) %}
{#- The median of a sorted Spark array of doubles without nulls; null when
    it is empty. -#}
    (case
        when size({{ sorted_list }}) = 0 then null
        when size({{ sorted_list }}) % 2 = 1
            then element_at({{ sorted_list }}, cast((size({{ sorted_list }}) + 1) / 2 as int))
        else
            element_at({{ sorted_list }}, cast(size({{ sorted_list }}) / 2 as int))
            * cast(0.5 as double)
            + element_at({{ sorted_list }}, cast(size({{ sorted_list }}) / 2 as int) + 1)
            * cast(0.5 as double)
    end)
{%- endmacro %}

{% macro regression_slope(y, x) %}
    {{ return(adapter.dispatch('regression_slope', 'obs')(y, x)) }}
{% endmacro %}

{# Null, not NaN, when x does not vary (one observed iteration). #}
{% macro default__regression_slope(y, x) %}
    case
        when var_pop({{ x }}) > 0
            then covar_pop({{ y }}, {{ x }}) / var_pop({{ x }})
    end
{% endmacro %}

{% macro duckdb__regression_slope(y, x) %}
    case when var_pop({{ x }}) > 0 then regr_slope({{ y }}, {{ x }}) end
{% endmacro %}

{% macro spark__regression_slope(y, x) %}
    case when var_pop({{ x }}) > 0 then regr_slope({{ y }}, {{ x }}) end
{% endmacro %}

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

{% macro binomial_tail(successes, trials, rate) %}
{#- The chance of `successes` or more successes in `trials` independent
    trials (SQL integers, successes <= trials) of chance `rate` (strictly
    between 0 and 1): the binomial terms from `successes` to `trials`,
    summed in order. -#}
    {{ return(adapter.dispatch('binomial_tail', 'obs')(successes, trials, rate)) }}
{% endmacro %}

{#- Spark has no lgamma: ln C(n, j) is summed from its factors,
    ln((n - j + i) / i) for i from 1 to j (the same number to about 1e-13
    of it). -#}
{% macro default__binomial_tail(successes, trials, rate) %}
    aggregate(
        transform(
            sequence({{ successes }}, {{ trials }}),
            j -> exp(
                case
                    when j = 0 then cast(0 as double)
                    else aggregate(
                        sequence(1, j),
                        cast(0 as double),
                        (log_choose, i) -> log_choose + ln({{ trials }} - j + i) - ln(i)
                    )
                end
                + j * ln({{ rate }}) + ({{ trials }} - j) * ln(1 - {{ rate }})
            )
        ),
        cast(0 as double),
        (tail, term) -> tail + term
    )
{% endmacro %}

{% macro duckdb__binomial_tail(successes, trials, rate) %}
    list_sum(
        list_transform(
            range({{ successes }}, {{ trials }} + 1),
            j -> exp(
                lgamma({{ trials }} + 1) - lgamma(j + 1)
                - lgamma({{ trials }} - j + 1)
                + j * ln({{ rate }}) + ({{ trials }} - j) * ln(1 - {{ rate }})
            )
        )
    )
{% endmacro %}
