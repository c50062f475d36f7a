{% macro spark_column_type(type) %}
{#- Spark's name of a column type declared with DuckDB's name (the lake
    sources' columns): varchar is string, `t[]` array<t>, `map(k, v)`
    map<k, v>; the numeric, boolean and timestamp names are the same. -#}
    {%- set type = type | trim -%}
    {%- if type.endswith('[]') -%}
        {{- return('array<' ~ spark_column_type(type[:-2]) ~ '>') -}}
    {%- elif type.startswith('map(') and type.endswith(')') -%}
        {%- set key, value = type[4:-1].split(',', 1) -%}
        {{- return('map<' ~ spark_column_type(key) ~ ', ' ~ spark_column_type(value) ~ '>') -}}
    {%- elif type in ('varchar', 'text', 'string') -%}
        {{- return('string') -}}
    {%- elif type in ('bigint', 'integer', 'double', 'boolean', 'timestamp', 'date') -%}
        {{- return(type) -}}
    {%- else -%}
        {{ exceptions.raise_compiler_error("spark_column_type: no Spark name for " ~ type) }}
    {%- endif -%}
{% endmacro %}
