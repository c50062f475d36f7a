{% macro ordered_string_agg(value, separator, order_by) %}
{#- Aggregate: the non-null texts joined by `separator` (SQL text) in the
    order of the `order_by` columns (a list of SQL expressions, ascending). -#}
    {{ return(adapter.dispatch('ordered_string_agg', 'obs')(value, separator, order_by)) }}
{% endmacro %}

{% macro default__ordered_string_agg(value, separator, order_by) %}
    array_join({{ ordered_list(value, order_by) }}, {{ separator }})
{% endmacro %}

{% macro duckdb__ordered_string_agg(value, separator, order_by) %}
    string_agg({{ value }}, {{ separator }} order by {{ order_by | join(', ') }})
{% endmacro %}
