{% macro row_numbers(order_by) %}
{#- A number for each row of a query (1, 2, ...), to join rows back after
    spreading them: DuckDB numbers them in no order; Spark needs an order
    (`order_by`: a list of columns that identify a row), so that every read
    of the query gives each row the same number. -#}
    {{ return(adapter.dispatch('row_numbers', 'obs')(order_by)) }}
{% endmacro %}

{% macro default__row_numbers(order_by) %}
    row_number() over (order by {{ order_by | join(', ') }})
{% endmacro %}

{% macro duckdb__row_numbers(order_by) %}
    row_number() over ()
{% endmacro %}
