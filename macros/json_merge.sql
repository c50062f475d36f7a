{% macro json_merge(objects) %}
{#- JSON objects merged into one (DuckDB's JSON; text on Spark), their
    members in order: the objects' keys must be distinct (a later key would
    replace an earlier one on DuckDB, and repeat it on Spark). -#}
    {%- if objects is string or objects | length < 2 -%}
        {{ exceptions.raise_compiler_error("json_merge: objects is a list of two or more JSON objects") }}
    {%- endif -%}
    {{ return(adapter.dispatch('json_merge', 'obs')(objects)) }}
{% endmacro %}

{#- Spark: the objects' members, joined (concat_ws leaves out the empty
    objects, made null). -#}
{% macro default__json_merge(objects) %}
    concat('{', concat_ws(','
    {%- for object in objects %},
        element_at(transform(array({{ object }}), json_part ->
            nullif(substr(json_part, 2, length(json_part) - 2), '')), 1)
    {%- endfor %}
    ), '}')
{% endmacro %}

{#- DuckDB: json_merge_patch, from the first object on. -#}
{% macro duckdb__json_merge(objects) %}
    {%- set merged = namespace(sql=objects[0]) -%}
    {%- for object in objects[1:] -%}
        {%- set merged.sql = 'json_merge_patch(' ~ merged.sql ~ ', ' ~ object ~ ')' -%}
    {%- endfor -%}
    {{ merged.sql }}
{% endmacro %}
