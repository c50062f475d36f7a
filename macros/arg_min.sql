{% macro arg_min(value, by) %}
{#- Aggregate: `value` at the row with the smallest `by`, over the rows
    where `value` is not null (rows with a null `by` are skipped). -#}
    {{ return(adapter.dispatch('arg_min', 'obs')(value, by)) }}
{% endmacro %}

{#- Spark's min_by keeps a null value: its row is taken out by a null `by`;
    ties on `by` go to the smallest value, whatever order the rows came in. -#}
{% macro default__arg_min(value, by) %}
    min_by({{ value }}, case when {{ value }} is not null then struct({{ by }}, {{ value }}) end)
{% endmacro %}

{% macro duckdb__arg_min(value, by) %}
    arg_min({{ value }}, {{ by }})
{% endmacro %}
