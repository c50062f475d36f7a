{% macro json_list_texts(json, key, field) %}
{#- A top-level key of a JSON object holding an array of objects: the text
    of each object's `field`, as a list; null when the key holds no array.
    Elements without the field: left out on DuckDB, null on Spark (count
    the non-null ones). -#}
    {{ return(adapter.dispatch('json_list_texts', 'obs')(json, key, field)) }}
{% endmacro %}

{#- Spark: from_json reads each element as its JSON text. -#}
{% macro default__json_list_texts(json, key, field) %}
    transform(
        from_json(get_json_object({{ json }}, '$.{{ key }}'), 'array<string>'),
        json_element -> get_json_object(json_element, '$.{{ field }}')
    )
{% endmacro %}

{% macro duckdb__json_list_texts(json, key, field) %}
    case
        when json_type({{ json }} -> '{{ key }}') = 'ARRAY'
            then json_extract_string({{ json }}, '$.{{ key }}[*].{{ field }}')
    end
{% endmacro %}
