{% macro as_json(expression) %}
{#- A JSON document held as text (the lake's JSON columns), as the engine
    holds JSON: DuckDB's JSON type; text elsewhere (Spark reads JSON text with
    get_json_object and from_json). -#}
    {{ return(adapter.dispatch('as_json', 'obs')(expression)) }}
{% endmacro %}

{% macro default__as_json(expression) %}
    cast({{ expression }} as string)
{% endmacro %}

{% macro duckdb__as_json(expression) %}
    cast({{ expression }} as json)
{% endmacro %}
