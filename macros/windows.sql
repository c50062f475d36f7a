{#- Windows and joins: row numbers and the as-of join. -#}

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

{% macro asof_inner_join(right, keys, left_at, right_at) %}
{#- A join clause (after `from left`): each row of the left relation with
    the row of `right` (a CTE name) of equal keys whose `right_at` is the
    latest at or before the row's `left_at`; a row with none is dropped
    (DuckDB's asof inner join). `keys`: a list of (left expression, right
    expression) pairs that must be equal. `right` holds one row per keys and
    `right_at`. -#}
    {%- if not keys -%}
        {{ exceptions.raise_compiler_error("asof_inner_join: keys is a list of (left, right) pairs") }}
    {%- endif -%}
    {{ return(adapter.dispatch('asof_inner_join', 'obs')(right, keys, left_at, right_at)) }}
{% endmacro %}

{#- Spark has no asof join: each row of `right` reaches until its keys' next
    `right_at` (lead), and the left row joins the one whose reach holds its
    `left_at` (a range join on the keys). -#}
{% macro default__asof_inner_join(right, keys, left_at, right_at) %}
    inner join (
        select
            {{ right }}.*,
            lead({{ right_at }}) over (
                partition by {{ keys | map(attribute=1) | join(', ') }}
                order by {{ right_at }}
            ) as asof_next_at
        from {{ right }}
    ) as {{ right }}
        on
            {%- for left_key, right_key in keys %}
            {{ left_key }} = {{ right_key }} and
            {%- endfor %}
            {{ left_at }} >= {{ right_at }}
            and ({{ right }}.asof_next_at is null or {{ left_at }} < {{ right }}.asof_next_at)
{% endmacro %}

{% macro duckdb__asof_inner_join(right, keys, left_at, right_at) %}
    asof inner join {{ right }}
        on
            {%- for left_key, right_key in keys %}
            {{ left_key }} = {{ right_key }} and
            {%- endfor %}
            {{ left_at }} >= {{ right_at }}
{% endmacro %}
