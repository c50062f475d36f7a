{% macro json_at(expression, index=none, name=none) %}
{#- An element of a JSON list (`index`: an SQL expression counting from 0)
    or a member of a JSON object (`name`: an SQL expression of its name),
    as text (json_text's); null when missing or not a list or object. -#}
    {%- if (index is none) == (name is none) -%}
        {{ exceptions.raise_compiler_error("json_at: index or name") }}
    {%- endif -%}
    {{ return(adapter.dispatch('json_at', 'obs')(expression, index, name)) }}
{% endmacro %}

{% macro default__json_at(expression, index, name) %}
    {%- if index is not none -%}
        get_json_object({{ expression }}, concat('$[', cast({{ index }} as string), ']'))
    {%- else -%}
        get_json_object({{ expression }}, concat('$[\'', {{ name }}, '\']'))
    {%- endif -%}
{% endmacro %}

{% macro duckdb__json_at(expression, index, name) %}
    {%- if index is not none -%}
        {{ expression }} ->> ({{ index }})
    {%- else -%}
        json_extract_string(
            {{ expression }},
            '$."' || {{ name }} || '"'
        )
    {%- endif -%}
{% endmacro %}
