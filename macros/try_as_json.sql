{% macro try_as_json(expression) %}
{#- A text that holds JSON, as the engine holds JSON (see as_json); null
    when it is not valid JSON. -#}
    {{ return(adapter.dispatch('try_as_json', 'obs')(expression)) }}
{% endmacro %}

{% macro default__try_as_json(expression) %}
    case when try_parse_json({{ expression }}) is not null then {{ expression }} end
{% endmacro %}

{% macro duckdb__try_as_json(expression) %}
    try_cast({{ expression }} as json)
{% endmacro %}
