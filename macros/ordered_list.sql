{% macro ordered_list(value, order_by) %}
{#- Aggregate: the values as a list in the order of the `order_by` columns
    (a list of SQL expressions, ascending; ties by the value on Spark). -#}
    {{ return(adapter.dispatch('ordered_list', 'obs')(value, order_by)) }}
{% endmacro %}

{% macro default__ordered_list(value, order_by) %}
    transform(
        array_sort(collect_list(named_struct(
            {%- for expression in order_by %}
            'order_{{ loop.index }}', {{ expression }},
            {%- endfor %}
            'value', {{ value }}
        ))),
        ordered -> ordered.value
    )
{% endmacro %}

{% macro duckdb__ordered_list(value, order_by) %}
    list({{ value }} order by {{ order_by | join(', ') }})
{% endmacro %}
