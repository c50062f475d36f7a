{% macro json_object_of(members) %}
{#- A JSON object of `members`, a list of (name, SQL expression, type), as
    the engine holds JSON (see as_json), written as DuckDB writes it. The
    type says how Spark writes the value: bigint, double (yyjson's digits),
    bigint_list (a list of bigints), or json (a JSON value as it is); null is written null. -#}
    {%- for name, expression, type in members -%}
        {%- if type not in ('bigint', 'double', 'bigint_list', 'json') -%}
            {{ exceptions.raise_compiler_error("json_object_of: type bigint, double, bigint_list or json, got " ~ type) }}
        {%- endif -%}
    {%- endfor -%}
    {{ return(adapter.dispatch('json_object_of', 'obs')(members)) }}
{% endmacro %}

{% macro default__json_object_of(members) %}
    concat(
        '{',
        {%- for name, expression, type in members %}
        '{{ "," if not loop.first }}"{{ name }}":',
        coalesce(
            {%- if type == 'bigint' %}
            cast({{ expression }} as string),
            {%- elif type == 'double' %}
            {{ _json_double_text(expression) }},
            {%- elif type == 'bigint_list' %}
            concat('[', array_join({{ expression }}, ','), ']'),
            {%- else %}
            {{ expression }},
            {%- endif %}
            'null'
        ),
        {%- endfor %}
        '}'
    )
{% endmacro %}

{% macro duckdb__json_object_of(members) %}
    json_object(
        {%- for name, expression, type in members %}
        '{{ name }}', {{ expression }}{{ "," if not loop.last }}
        {%- endfor %}
    )
{% endmacro %}
