{% macro create_lake_tables() %}
{#- on-run-start: make the lake's tables readable by the engine. DuckDB
    reads the parts in place (the lake source's external location): nothing
    to do. -#}
    {{ return(adapter.dispatch('create_lake_tables', 'obs')()) }}
{% endmacro %}

{% macro default__create_lake_tables() %}
{% endmacro %}

{#- Spark: each lake source becomes a table of the schema `lake` over its
    folder, with the columns the source declares, partitioned by run and
    publish time (text: the profile turns partition type inference off), its
    partitions registered from the folders present now. Made again at every
    run, so the parts and columns that landed since are read; dropping such a
    table forgets it and leaves its parts alone. A table with no part yet is
    an empty table of the same columns in the Spark warehouse (a table over a
    missing folder would create it in the lake). -#}
{% macro spark__create_lake_tables() %}
    {%- if execute -%}
        {%- set lake = env_var('OBS_LAKE', 'lake') -%}
        {%- set listed = run_query(
            "select distinct regexp_extract(path, '/([^/]+)/[^/]+/[^/]+/[^/]+$', 1) "
            ~ "from binaryFile.`" ~ lake ~ "/*/*/*/*.parquet`"
        ) -%}
        {%- set with_parts = listed.columns[0].values() -%}
        {%- set made = [] -%}
        {%- for node in graph.sources.values() if node.source_name == 'lake' -%}
            {%- set relation = api.Relation.create(schema=node.schema, identifier=node.identifier) -%}
            {%- if node.schema not in made -%}
                {%- do run_query('create schema if not exists ' ~ node.schema) -%}
                {%- do made.append(node.schema) -%}
            {%- endif -%}
            {%- set columns = [] -%}
            {%- for name, type in lake_columns(node.name) -%}
                {%- do columns.append(adapter.quote(name) ~ ' ' ~ spark_column_type(type)) -%}
            {%- endfor -%}
            {%- do run_query('drop table if exists ' ~ relation) -%}
            {%- set ddl -%}
                create table {{ relation }} ({{ columns | join(', ') }})
                using parquet
                partitioned by (run_id, ingested_at)
                {%- if node.name in with_parts %}
                location '{{ (lake ~ "/" ~ node.name) | replace("'", "\\'") }}'
                {%- endif %}
            {%- endset -%}
            {%- do run_query(ddl) -%}
            {%- if node.name in with_parts -%}
                {%- do run_query('msck repair table ' ~ relation) -%}
            {%- endif -%}
        {%- endfor -%}
    {%- endif -%}
{% endmacro %}
