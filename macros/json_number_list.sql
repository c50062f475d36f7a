{% macro json_number_list(json, key) %}
{#- A top-level key of a JSON object holding an array of numbers, as a list
    of doubles; null when the key holds no array. -#}
    {{ return(adapter.dispatch('json_number_list', 'obs')(json, key)) }}
{% endmacro %}

{#- Spark: from_json gives null for a value that is no array. -#}
{% macro default__json_number_list(json, key) %}
    from_json(get_json_object({{ json }}, '$.{{ key }}'), 'array<double>')
{% endmacro %}

{% macro duckdb__json_number_list(json, key) %}
    case
        when json_type({{ json }} -> '{{ key }}') = 'ARRAY'
            then from_json({{ json }} -> '{{ key }}', '["DOUBLE"]')
    end
{% endmacro %}
