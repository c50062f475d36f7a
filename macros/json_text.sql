{% macro json_text(json, key) %}
{#- The value of a top-level key of a JSON object held as the engine holds
    JSON (as_json): a string's text, a number's or boolean's text, an
    array's or object's JSON text; null when missing or JSON null. -#}
    {{ return(adapter.dispatch('json_text', 'obs')(json, key)) }}
{% endmacro %}

{% macro default__json_text(json, key) %}
    get_json_object({{ json }}, '$.{{ key }}')
{% endmacro %}

{% macro duckdb__json_text(json, key) %}
    ({{ json }} ->> '{{ key }}')
{% endmacro %}
