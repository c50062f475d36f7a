{% macro ordered_string_agg(expression, separator, order_by) %}
{#- Aggregate: the non-null texts of `expression` joined by `separator` (an
    SQL string), in the order of the `order_by` expressions (ascending). -#}
    {%- if order_by is string or not order_by -%}
        {{ exceptions.raise_compiler_error("ordered_string_agg: order_by is a list of SQL expressions") }}
    {%- endif -%}
    {{ return(adapter.dispatch('ordered_string_agg', 'obs')(expression, separator, order_by)) }}
{% endmacro %}

{#- Spark: the ordered list, joined (array_join leaves nulls out, as
    string_agg does). -#}
{% macro default__ordered_string_agg(expression, separator, order_by) %}
    array_join({{ default__ordered_list(expression, order_by) }}, {{ separator }})
{% endmacro %}

{% macro duckdb__ordered_string_agg(expression, separator, order_by) %}
    string_agg({{ expression }}, {{ separator }} order by {{ order_by | join(', ') }})
{% endmacro %}
