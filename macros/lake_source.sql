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
