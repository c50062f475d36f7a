{% macro ordered_non_null_list(expression, order_by) %}
{#- Aggregate: the list of `expression` over the group's rows, ordered by
    `order_by` (unique within the group, so the order is one). Null values
    of `expression` are left out. -#}
    {{ return(adapter.dispatch('ordered_non_null_list', 'obs')(expression, order_by)) }}
{% endmacro %}

{#- Spark: collect_list keeps no order; sorting (key, value) structs gives it. -#}
{% macro default__ordered_non_null_list(expression, order_by) %}
    transform(
        array_sort(collect_list(
            case when ({{ expression }}) is not null
                then named_struct('key', {{ order_by }}, 'value', {{ expression }}) end
        )),
        ordered_entry -> ordered_entry.value
    )
{% endmacro %}

{% macro duckdb__ordered_non_null_list(expression, order_by) %}
    list({{ expression }} order by {{ order_by }}) filter (where ({{ expression }}) is not null)
{% endmacro %}
