{% macro repeat_fold(times, start, state, body) %}
{#- A loop in one expression: `start`, then `body` (of `state`, the value
    so far; the same type) applied `times` times (a number). -#}
    {%- if times is not number or times < 1 -%}
        {{ exceptions.raise_compiler_error("repeat_fold: times is a number from 1") }}
    {%- endif -%}
    {{ return(adapter.dispatch('repeat_fold', 'obs')(times, start, state, body)) }}
{% endmacro %}

{% macro default__repeat_fold(times, start, state, body) %}
    aggregate(sequence(1, {{ times }}), {{ start }}, ({{ state }}, repeat_step) -> {{ body }})
{% endmacro %}

{#- DuckDB's list_reduce folds a list of the start's type: the start, then
    `times` nulls of its type (list_resize pads with nulls), so the start is
    computed once and the padding costs nothing. -#}
{% macro duckdb__repeat_fold(times, start, state, body) %}
    list_reduce(
        list_resize([{{ start }}], {{ times }} + 1),
        ({{ state }}, repeat_step) -> {{ body }}
    )
{% endmacro %}
