{#- The lake: its sources, its partition times, and the tables Spark reads
    it through. -#}

{% macro lake_source(table_name) %}
{#- The lake table as a relation, with every column its source declares
    (models/staging/lake/_lake__sources.yml), or an empty relation of those
    columns when the lake holds no part of it yet (a lake of rollouts only
    has no metrics, and one of tracker histories only has no rollouts): one
    missing table must not break the build of the others. In a unit test
    the source is the test's fixture and is returned as it is. -#}
    {{ return(adapter.dispatch('lake_source', 'obs')(table_name)) }}
{% endmacro %}

{#- Any other engine: the source is a table holding every declared column
    (on Spark, create_lake_tables makes one, empty when the lake holds no
    part of it). -#}
{% macro default__lake_source(table_name) %}
    {{- source('lake', table_name) -}}
{% endmacro %}

{#- DuckDB reads the parts with read_parquet, which fails on a pattern that
    matches no file, and names only the columns some part holds (a part
    landed before a column existed reads it as null once another part has
    it): the union with a typed empty relation gives every declared column.
    `obs build` rebuilds the view once the table's first part lands (the
    table's lake mark changes). -#}
{% macro duckdb__lake_source(table_name) %}
    {%- set relation = source('lake', table_name) -%}
    {%- set text = relation | string -%}
    {%- if not (execute and 'read_parquet' in text) -%}
        {{ relation }}
    {%- else -%}
        {%- set empty -%}
            (select
            {%- for name, type in lake_columns(table_name) %}
                cast(null as {{ type }}) as {{ name }}{{ "," if not loop.last }}
            {%- endfor %}
            where false)
        {%- endset -%}
        (select * from
        {%- if obs_plan_mode() %}
            {#- obs's executor keeps the first when the table has parts, else the second #}
            {{ obs_plan_marker('lake', {'table': table_name}) }} {{ relation }} /*obs:else*/ {{ empty }} /*obs:end*/
        {%- elif lake_has_parts(table_name) %}
            {{ relation }}
        {%- else %}
            {{ empty }}
        {%- endif %}
        union all by name
        select * from {{ empty }})
    {%- endif -%}
{% endmacro %}

{% macro lake_columns(table_name) %}
{#- (name, type) of each column the lake source `table_name` declares, in
    order; DuckDB's type names. -#}
    {%- set found = [] -%}
    {%- for node in graph.sources.values() -%}
        {%- if node.source_name == 'lake' and node.name == table_name -%}
            {%- for column in node.columns.values() -%}
                {%- do found.append((column.name, column.data_type)) -%}
            {%- endfor -%}
        {%- endif -%}
    {%- endfor -%}
    {%- if not found -%}
        {{ exceptions.raise_compiler_error(
            "lake_columns: the lake source " ~ table_name ~ " declares no columns"
        ) }}
    {%- endif -%}
    {{ return(found) }}
{% endmacro %}

{% macro lake_parts_glob(table_name) %}
{#- The glob of a lake table's parts, as a quoted SQL string. -#}
    {%- set pattern = env_var("OBS_LAKE", "lake") ~ "/" ~ table_name ~ "/*/*/*.parquet" -%}
    '{{ pattern | replace("'", "''") }}'
{%- endmacro %}

{% macro lake_has_parts(table_name) %}
    {%- set found = run_query("select count(*) from glob(" ~ lake_parts_glob(table_name) ~ ")") -%}
    {{ return(found.columns[0].values()[0] > 0) }}
{% endmacro %}

{% macro lake_time(column) %}
{#- A part's publish time from its `ingested_at=<t>` folder name: the lake's
    layout writes t as UTC to the microsecond in this format (obs.core.lake_layout
    holds the same format; a test keeps the two equal). A timestamp without
    time zone. -#}
    {{ return(adapter.dispatch('lake_time', 'obs')(column)) }}
{% endmacro %}

{#- Spark: the same format in Java's letters. -#}
{% macro default__lake_time(column) %}
    to_timestamp_ntz({{ column }}, "yyyyMMdd'T'HHmmssSSSSSS'Z'")
{%- endmacro %}

{% macro duckdb__lake_time(column) %}
    strptime({{ column }}, '%Y%m%dT%H%M%S%fZ')
{%- endmacro %}

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
