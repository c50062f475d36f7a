{% macro number_text(expression) %}
{#- A double as text, as DuckDB casts it (Python's repr): the shortest
    digits that read back as the same double, plain from 1e-4 to below 1e16
    (`0.0001`, `3.0`, `1234.5`), else with an exponent (`1e-05`, `1.5e+16`);
    `nan`, `inf`, `-inf`; null for null. For numbers in sentences. -#}
    {{ return(adapter.dispatch('number_text', 'obs')(expression)) }}
{% endmacro %}

{#- Spark casts a double with Java's Double.toString (`1.0E-5`, and on Java
    before 19 sometimes a digit more than needed): the shortest digits are
    found instead, then laid out as DuckDB does. -#}
{% macro default__number_text(expression) %}
    {{ _spark_number_text(expression, 'nan', 'inf', -4, 16, '+', 2) }}
{% endmacro %}

{% macro duckdb__number_text(expression) %}
    cast({{ expression }} as varchar)
{% endmacro %}

{% macro _spark_number_text(expression, nan, infinity, plain_from, plain_below, plus, exponent_digits) %}
{#- Spark: a double's shortest round-trip digits, laid out plain for a
    decimal exponent in [plain_from, plain_below), else as d.ddd e <sign>
    <exponent> (`plus` before a positive exponent, at least
    `exponent_digits` digits); `nan` and `infinity` name the non-finite
    values. The digits: the first of Java's %.{p}e forms, p from 0 to 16,
    that reads back as the same double. Each value is bound once (a one
    element array's transform), so the expression is written out once. -#}
    element_at(transform(array(cast({{ expression }} as double)), number_value ->
        case
            when number_value is null then cast(null as string)
            when isnan(number_value) then '{{ nan }}'
            when number_value = double('infinity') then '{{ infinity }}'
            when number_value = double('-infinity') then '-{{ infinity }}'
            else element_at(transform(array(
                case
                {%- for places in range(16) %}
                    when cast(format_string('%.{{ places }}e', number_value) as double) = number_value
                        then format_string('%.{{ places }}e', number_value)
                {%- endfor %}
                    else format_string('%.16e', number_value)
                end
            ), number_scientific -> element_at(transform(array(named_struct(
                'sign', case when number_scientific like '-%' then '-' else '' end,
                'digits', regexp_replace(
                    replace(regexp_extract(number_scientific, '([0-9.]+)e', 1), '.', ''), '0+$', ''
                ),
                'exponent', cast(regexp_extract(number_scientific, 'e([-+][0-9]+)', 1) as int)
            )), number_parts -> number_parts.sign || case
                when number_parts.digits = '' then '0.0'
                when number_parts.exponent >= {{ plain_from }} and number_parts.exponent < 0
                    then '0.' || repeat('0', -number_parts.exponent - 1) || number_parts.digits
                when number_parts.exponent >= 0 and number_parts.exponent < {{ plain_below }}
                    then case
                        when length(number_parts.digits) <= number_parts.exponent + 1
                            then number_parts.digits
                            || repeat('0', number_parts.exponent + 1 - length(number_parts.digits))
                            || '.0'
                        else substr(number_parts.digits, 1, number_parts.exponent + 1) || '.'
                            || substr(number_parts.digits, number_parts.exponent + 2)
                    end
                else substr(number_parts.digits, 1, 1)
                    || case
                        when length(number_parts.digits) > 1
                            then '.' || substr(number_parts.digits, 2)
                        else ''
                    end
                    || 'e' || case when number_parts.exponent < 0 then '-' else '{{ plus }}' end
                    {#- lpad cuts a longer text to the length: at least the digits -#}
                    || lpad(
                        cast(abs(number_parts.exponent) as string),
                        greatest(length(cast(abs(number_parts.exponent) as string)), {{ exponent_digits }}),
                        '0'
                    )
            end), 1)), 1)
        end), 1)
{%- endmacro %}
