{% macro json_string(expression) %}
{#- A text as a JSON string (quoted, `"` and `\` escaped). Spark escapes no
    control character: for names such as metric keys. -#}
    {{ return(adapter.dispatch('json_string', 'obs')(expression)) }}
{% endmacro %}

{% macro default__json_string(expression) %}
    concat('"', replace(replace({{ expression }}, '\\', '\\\\'), '"', '\\"'), '"')
{% endmacro %}

{% macro duckdb__json_string(expression) %}
    to_json({{ expression }})
{% endmacro %}
