{% macro round_to(expression, places) %}
{#- A double rounded to `places` decimal places, where `places` may be an
    expression (a negative one rounds to tens, hundreds...): halves away from
    zero, as DuckDB's round does it (x * 10^p rounded, over 10^p), so every
    engine gives the same bits. -#}
    {{ return(adapter.dispatch('round_to', 'obs')(expression, places)) }}
{% endmacro %}

{#- Spark's round takes a constant scale only: DuckDB's arithmetic, written
    out (a power of ten up to 10^22 is exact, so the division by 10^-p is
    taken where p is negative). -#}
{% macro default__round_to(expression, places) %}
    (case
        when ({{ places }}) >= 0
            then round(({{ expression }}) * power(10, {{ places }}))
            / power(10, {{ places }})
        else round(({{ expression }}) / power(10, -({{ places }})))
            * power(10, -({{ places }}))
    end)
{% endmacro %}

{% macro duckdb__round_to(expression, places) %}
    round({{ expression }}, {{ places }})
{% endmacro %}
