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
