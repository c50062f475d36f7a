{% macro ordered_list(value, order_by, filter=none) %}
{#- Aggregate: the values as a list in the order of the `order_by` columns
    (a list of SQL expressions, ascending; ties by the value on Spark), of
    the rows `filter` (an SQL condition) keeps when given. With no such row
    DuckDB gives null and Spark an empty list: coalesce the two alike. -#}
    {{ return(adapter.dispatch('ordered_list', 'obs')(value, order_by, filter)) }}
{% endmacro %}

{% macro default__ordered_list(value, order_by, filter=none) %}
    transform(
        array_sort(collect_list(named_struct(
            {%- for expression in order_by %}
            'order_{{ loop.index }}', {{ expression }},
            {%- endfor %}
            'value', {{ value }}
        )){% if filter is not none %} filter (where {{ filter }}){% endif %}),
        ordered -> ordered.value
    )
{% endmacro %}

{% macro duckdb__ordered_list(value, order_by, filter=none) %}
    list({{ value }} order by {{ order_by | join(', ') }})
    {%- if filter is not none %} filter (where {{ filter }}){% endif %}
{% endmacro %}
