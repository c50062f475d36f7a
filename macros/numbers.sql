{#- Numbers: division, rounding, fixed-point text, finiteness, and float
    sums that do not depend on the order they were added in. -#}

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

{% macro format_fixed(expression, places) %}
{#- A double as text with `places` decimals (C's %.Nf: the exact binary
    value rounded half to even, so 0.125 reads 0.12), no grouping; null for
    null, nan and inf as C writes them. -#}
    {%- if places is not number or places < 0 or places > 15 -%}
        {{ exceptions.raise_compiler_error("format_fixed: places is a number from 0 to 15") }}
    {%- endif -%}
    {{ return(adapter.dispatch('format_fixed', 'obs')(expression, places)) }}
{% endmacro %}

{#- Spark: format_number rounds the exact value half to even (Java's
    DecimalFormat); its grouping commas are taken out. -#}
{% macro default__format_fixed(expression, places) %}
    case
        when isnan(cast({{ expression }} as double)) then 'nan'
        when cast({{ expression }} as double) = double('infinity') then 'inf'
        when cast({{ expression }} as double) = double('-infinity') then '-inf'
        else replace(format_number(cast({{ expression }} as double), {{ places }}), ',', '')
    end
{% endmacro %}

{% macro duckdb__format_fixed(expression, places) %}
    printf('%.{{ places }}f', {{ expression }})
{% endmacro %}

{% macro is_finite(expression) %}
{#- Whether a double is a number other than NaN and the infinities (null
    for null). -#}
    {{ return(adapter.dispatch('is_finite', 'obs')(expression)) }}
{% endmacro %}

{% macro default__is_finite(expression) %}
    (not isnan({{ expression }}) and abs({{ expression }}) != double('infinity'))
{% endmacro %}

{% macro duckdb__is_finite(expression) %}
    isfinite({{ expression }})
{% endmacro %}

{#- `expression` (a double) with only the digits that do not depend on the
    order a float aggregate added in. Two steps, both plain arithmetic:
    1. round to 40 significant bits (Veltkamp's split: c = x * (2^13 + 1),
       c - (c - x)): the last bits, where the summing order leaves its
       noise, fall on one value;
    2. round that to `digits` significant decimal digits, so the value
       published reads as the number it is (0.3, not 0.29999999999998).
    Step 1 first, because an exact decimal tie is common (the mean of a few
    values already rounded to 12 digits ends in 5 at the 13th digit), and
    rounding noise around a tie to decimals would still wobble; a tie on the
    40-bit grid needs a value of exactly 41 bits, which noise around a
    decimal never is. Zero, null, NaN, infinities and magnitudes above 1e300
    or below 1e-290 pass unchanged (the powers of ten would overflow). #}
{% macro exact_float(expression, digits=12) %}
    {%- if digits is not number or digits < 1 or digits > 15 -%}
        {{ exceptions.raise_compiler_error(
            "exact_float: digits must be an integer from 1 to 15, got "
            ~ digits
        ) }}
    {%- endif -%}
    {%- set x = 'cast((' ~ expression ~ ') as double)' -%}
    {%- set split = '(' ~ x ~ ' * cast(8193 as double))' -%}
    {%- set bits = '(' ~ split ~ ' - (' ~ split ~ ' - ' ~ x ~ '))' -%}
    (case
        when
            {{ x }} is null
            or isnan({{ x }})
            or {{ x }} = 0
            or abs({{ x }}) > 1e300
            or abs({{ x }}) < 1e-290
            then {{ x }}
        else {{ round_to(
            bits,
            (digits - 1) ~ ' - cast(floor(log10(abs(' ~ bits ~ '))) as integer)'
        ) }}
    end)
{%- endmacro %}
