{% macro json_kind(expression) %}
{#- 'ARRAY' for a JSON list, 'OBJECT' for an object (JSON text, or DuckDB's
    JSON type); another name for the other JSON values (the engine's own),
    null for null. -#}
    {{ return(adapter.dispatch('json_kind', 'obs')(expression)) }}
{% endmacro %}

{% macro default__json_kind(expression) %}
    case
        when schema_of_variant(try_parse_json({{ expression }})) like 'ARRAY%' then 'ARRAY'
        when schema_of_variant(try_parse_json({{ expression }})) like 'OBJECT%' then 'OBJECT'
        else schema_of_variant(try_parse_json({{ expression }}))
    end
{% endmacro %}

{% macro duckdb__json_kind(expression) %}
    json_type({{ expression }})
{% endmacro %}
