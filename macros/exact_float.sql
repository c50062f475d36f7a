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
