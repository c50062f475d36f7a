{% macro json_object_of(pairs=[]) %}
{#- A JSON object (DuckDB's JSON; text on Spark) of (key, value) pairs: a
    key is a plain name (letters, digits, underscores), a value an SQL
    expression of a number; no pairs make `{}`. -#}
    {%- if pairs is string -%}
        {{ exceptions.raise_compiler_error("json_object_of: pairs is a list of (key, value)") }}
    {%- endif -%}
    {{ return(adapter.dispatch('json_object_of', 'obs')(pairs)) }}
{% endmacro %}

{% macro default__json_object_of(pairs) %}
    {%- if not pairs -%}
    '{}'
    {%- else -%}
    concat('{',
    {%- for key, value in pairs %}
        '{{ "," if not loop.first }}"{{ key }}":', {{ spark_json_number(value) }},
    {%- endfor %}
    '}')
    {%- endif -%}
{% endmacro %}

{% macro duckdb__json_object_of(pairs) %}
    json_object(
    {%- for key, value in pairs -%}
        '{{ key }}', {{ value }}{{ ', ' if not loop.last }}
    {%- endfor -%}
    )
{% endmacro %}
