{% macro key_value_list(pairs) %}
{#- A list of {key, value} structs, one per (key, value) pair of SQL
    expressions, in order: a finding's measures. -#}
    {%- if pairs is string or not pairs -%}
        {{ exceptions.raise_compiler_error("key_value_list: pairs is a list of (key, value) SQL expressions") }}
    {%- endif -%}
    {{ return(adapter.dispatch('key_value_list', 'obs')(pairs)) }}
{% endmacro %}

{% macro default__key_value_list(pairs) %}
    array(
    {%- for key, value in pairs %}
        named_struct('key', {{ key }}, 'value', {{ value }}){{ ',' if not loop.last }}
    {%- endfor %}
    )
{% endmacro %}

{% macro duckdb__key_value_list(pairs) %}
    [
    {%- for key, value in pairs %}
        { 'key': {{ key }}, 'value': {{ value }} }{{ ',' if not loop.last }}
    {%- endfor %}
    ]
{% endmacro %}
