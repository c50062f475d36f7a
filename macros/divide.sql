{% macro divide(numerator, denominator) %}
{#- Floating division as DuckDB divides doubles (IEEE): by zero, an
    infinity with the numerator's sign, or NaN for 0 / 0. -#}
    {{ return(adapter.dispatch('divide', 'obs')(numerator, denominator)) }}
{% endmacro %}

{#- Spark divides by zero into null (dbt-spark turns ANSI mode off; with it
    on, Spark 4's default, the query fails): a zero denominator is handled
    first. -#}
{% macro default__divide(numerator, denominator) %}
    element_at(transform(array(named_struct(
        'numerator', cast({{ numerator }} as double),
        'denominator', cast({{ denominator }} as double)
    )), division -> case
        when division.numerator is null or division.denominator is null then null
        when division.denominator != 0 then division.numerator / division.denominator
        when isnan(division.numerator) or division.numerator = 0 then double('nan')
        when division.numerator > 0 then double('infinity')
        else double('-infinity')
    end), 1)
{% endmacro %}

{% macro duckdb__divide(numerator, denominator) %}
    ({{ numerator }}) / ({{ denominator }})
{% endmacro %}
