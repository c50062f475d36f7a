{% macro changed_runs(upstream, parts, own_parts='run_parts') %}
{#- Every row of `upstream` of the runs whose lake parts changed since this
    model read them, when the model builds incrementally; every row
    otherwise. For models built by run (a tracker history is judged whole),
    where a publish-time watermark would re-read each run's newest part at
    every build. `parts` is a relation or subquery of (run_id, run_parts):
    how many lake parts each run has now. The model keeps, on each row, the
    `own_parts` it read for the run; a run whose count differs (a part
    landed, or one the last build's listing missed), or that it does not
    hold, is read whole. Parts are never removed from the lake, so an equal
    count means the same parts. The runs are written into the query as
    constants, so DuckDB skips the other runs' parts unread. -#}
select upstream.*
from {{ upstream }} as upstream
{%- if is_incremental() %}
where {{ changed_runs_predicate(parts, own_parts) }}
{%- endif %}
{% endmacro %}

{% macro changed_runs_predicate(parts, own_parts) %}
{%- if not execute -%}
    true
{%- elif obs_plan_mode() -%}
    {{ obs_plan_marker('runs', {'parts': parts | string, 'own_parts': own_parts, 'this': this | string}) }}
{%- else -%}
    {%- set changed = run_query(
        "select now.run_id from (select run_id, max(run_parts) as run_parts from "
        ~ parts ~ " as parts group by 1) as now left join (select run_id, max("
        ~ own_parts ~ ") as run_parts from " ~ this ~ " group by 1) as held using (run_id) "
        ~ "where held.run_parts is distinct from now.run_parts order by 1"
    ) -%}
    {%- if not changed.rows -%}
        false
    {%- else -%}
        upstream.run_id in (
        {%- for row in changed.rows -%}
            {{ _quoted(row[0]) }}{{ ", " if not loop.last }}
        {%- endfor -%}
        )
    {%- endif -%}
{%- endif -%}
{% endmacro %}

{% macro lake_run_parts(table_name) %}
{#- (run_id, run_parts) of a lake table: how many parts each run has. -#}
    {{ return(adapter.dispatch('lake_run_parts', 'obs')(table_name)) }}
{%- endmacro %}

{#- Spark: the publish times each run's rows hold in the lake table (made at
    the run's start, create_lake_tables). A part is one file in its own
    publish-time folder, so this counts the parts a model reads (a part with
    no rows, which gives a model nothing, is not counted). Only the
    partition columns are read. A unit test reads no lake (its graph holds
    no sources): no parts. -#}
{% macro default__lake_run_parts(table_name) %}
    {%- set in_unit_test = execute and model.resource_type == 'unit_test' -%}
    {%- set found = [] -%}
    {%- for node in (graph.sources.values() if execute and not in_unit_test else []) -%}
        {%- if node.source_name == 'lake' and node.name == table_name -%}
            {%- do found.append(api.Relation.create(schema=node.schema, identifier=node.identifier)) -%}
        {%- endif -%}
    {%- endfor -%}
    {%- if not execute or in_unit_test -%}
        {{ return('(select null as run_id, 0 as run_parts)') }}
    {%- elif not found -%}
        {{ exceptions.raise_compiler_error("lake_run_parts: no lake source " ~ table_name) }}
    {%- endif -%}
    (select
        cast(run_id as string) as run_id,
        count(distinct ingested_at) as run_parts
    from {{ found[0] }}
    group by 1)
{%- endmacro %}

{#- DuckDB: from the file listing alone (no parquet is opened). -#}
{% macro duckdb__lake_run_parts(table_name) %}
    (select
        regexp_extract(file, '/run_id=([^/]*)/ingested_at=[^/]*/[^/]*$', 1) as run_id,
        count(*) as run_parts
    from glob({{ lake_parts_glob(table_name) }})
    group by 1)
{%- endmacro %}
