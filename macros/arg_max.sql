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
