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
