{% macro lake_source(table_name, columns) %}
{#- The lake table as a relation, or an empty one of the same columns when the
    lake holds no part of it yet (a lake of rollouts only has no metrics, and
    one of tracker histories only has no rollouts): read_parquet fails on a
    pattern that matches no file, and one missing table must not break the
    build of the others. `obs build` rebuilds the view once the table's first
    part lands (the table's lake mark changes). In a unit test the source is
    the test's fixture and is returned as it is. -#}
    {%- set relation = source('lake', table_name) -%}
    {%- set text = relation | string -%}
    {%- if execute and 'read_parquet' in text and obs_plan_mode() -%}
        {#- obs's executor keeps the first when the table has parts, else the second -#}
        {{ obs_plan_marker('lake', {'table': table_name}) }} {{ relation }} /*obs:else*/ (select
        {%- for name, type in columns.items() %}
            cast(null as {{ type }}) as {{ name }}{{ "," if not loop.last }}
        {%- endfor %}
        where false) /*obs:end*/
    {%- elif execute and 'read_parquet' in text and not lake_has_parts(table_name) -%}
        (select
        {%- for name, type in columns.items() %}
            cast(null as {{ type }}) as {{ name }}{{ "," if not loop.last }}
        {%- endfor %}
        where false)
    {%- else -%}
        {{ relation }}
    {%- endif -%}
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
