{% macro spark_json_number(expression) %}
{#- Spark: a number as DuckDB's JSON writes it (for the Spark forms of the
    JSON macros; DuckDB writes JSON with its own functions). An integer as
    its digits; a double with its shortest round-trip digits, plain from
    1e-6 to below 1e21 (`0.000012`, `3.0`), else with a bare exponent
    (`1e-7`, `1.5e25`); NaN and Infinity as DuckDB writes them. -#}
    (case
        when typeof({{ expression }}) in ('tinyint', 'smallint', 'int', 'bigint')
            then cast({{ expression }} as string)
        else {{ _spark_number_text(expression, 'NaN', 'Infinity', -6, 21, '', 1) }}
    end)
{%- endmacro %}
