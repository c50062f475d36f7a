{% macro json_text(expression, key) %}
{#- The member `key` of a JSON object (JSON text, or DuckDB's JSON type) as
    text: a string's value, the JSON text of anything else; null when the
    member is missing. `key`: a member name (taken whole: `data.lr` is the
    member of that name, not a path; no quote or backslash in it), or a
    list of names, the path to a nested member. -#}
    {%- set names = [key] if key is string else key -%}
    {%- for name in names -%}
        {%- if not name is string or "'" in name or '"' in name or '\\' in name -%}
            {{ exceptions.raise_compiler_error("json_text: member names without quotes or backslashes, got " ~ key) }}
        {%- endif -%}
    {%- endfor -%}
    {{ return(adapter.dispatch('json_text', 'obs')(expression, key)) }}
{% endmacro %}

{% macro default__json_text(expression, key) %}
    {%- set names = [key] if key is string else key -%}
    get_json_object({{ expression }}, '$
    {%- for name in names -%}
        {%- if modules.re.fullmatch('\\w+', name) %}.{{ name }}{% else %}[\'{{ name }}\']{% endif -%}
    {%- endfor %}')
{% endmacro %}

{% macro duckdb__json_text(expression, key) %}
    {%- if key is string -%}
        {{ expression }} ->> '{{ key }}'
    {%- else -%}
        json_extract_string({{ expression }}, '$.{{ key | join(".") }}')
    {%- endif -%}
{% endmacro %}
