{% macro ordered_list(expression, order_by) %}
{#- Aggregate: the values of `expression` (nulls kept) as a list, in the
    order of the `order_by` expressions (ascending; the values themselves
    break ties on Spark). -#}
    {%- if order_by is string or not order_by -%}
        {{ exceptions.raise_compiler_error("ordered_list: order_by is a list of SQL expressions") }}
    {%- endif -%}
    {{ return(adapter.dispatch('ordered_list', 'obs')(expression, order_by)) }}
{% endmacro %}

{#- Spark's collect_list has no order: each value travels in a struct led by
    its sort keys, and the sorted structs give the values back. -#}
{% macro default__ordered_list(expression, order_by) %}
    transform(
        array_sort(collect_list(named_struct(
        {%- for key in order_by %}
            'key_{{ loop.index }}', {{ key }},
        {%- endfor %}
            'value', {{ expression }}
        ))),
        ordered_item -> ordered_item.value
    )
{% endmacro %}

{% macro duckdb__ordered_list(expression, order_by) %}
    list({{ expression }} order by {{ order_by | join(', ') }})
{% endmacro %}
