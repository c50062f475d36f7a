{% macro json_text(expression, key) %}
{#- The member `key` of a JSON object (JSON text, or DuckDB's JSON type) as
    text: a string's value, the JSON text of anything else; null when the
    member is missing. `key`: a member name of letters, digits and `_`. -#}
    {%- if not key is string or not modules.re.fullmatch('\\w+', key) -%}
        {{ exceptions.raise_compiler_error("json_text: key must be a plain member name, got " ~ key) }}
    {%- endif -%}
    {{ return(adapter.dispatch('json_text', 'obs')(expression, key)) }}
{% endmacro %}

{% macro default__json_text(expression, key) %}
    get_json_object({{ expression }}, '$.{{ key }}')
{% endmacro %}

{% macro duckdb__json_text(expression, key) %}
    {{ expression }} ->> '{{ key }}'
{% endmacro %}
