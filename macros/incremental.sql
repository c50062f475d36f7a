{#- Incremental models: which runs, groups and rows a build replaces, and
    the rows newly published.

    These macros are the one place the selection is written. In a dbt run
    they look the changes up and write the predicate; while obs compiles its
    plan (obs_plan_mode) they write a marker carrying the same SQL with slots
    for the values (__obs_run__, __obs_runs__, __obs_values__, __obs_time__,
    __obs_conditions__), and obs's executor (runner/executor.py) only fills
    the slots with what its listing of the lake says changed. -#}

{% macro incremental_by(grain, unique_key=none, merges_held_rows=false) %}
{#- The config of an incremental model, on each adapter by its own strategy:
    `{{ config(incremental_by(['run_id', 'iteration'])) }}`. `grain`: the
    columns of the groups a build replaces whole (every row of a group it
    reads again is in its new rows: see changed_rows). `unique_key`: the
    key DuckDB deletes by (default the grain). merges_held_rows: the model
    reads its own table ({{ this }}) to merge new rows into what it holds
    (dim_prompts). -#}
    {%- if not grain or grain is string -%}
        {{ exceptions.raise_compiler_error("incremental_by: grain is a list of columns") }}
    {%- endif -%}
    {{ return(adapter.dispatch('incremental_by', 'obs')(grain, unique_key or grain, merges_held_rows)) }}
{% endmacro %}

{#- DuckDB and any engine with DELETE: delete the new rows' keys, insert the
    rows (the project's delete+insert, get_delete_insert_merge_sql in
    macros/dbt_overrides.sql). -#}
{% macro default__incremental_by(grain, unique_key, merges_held_rows) %}
    {{ return({'materialized': 'incremental', 'unique_key': unique_key}) }}
{% endmacro %}

{#- Spark: parquet tables partitioned by the grain, whose new rows replace
    their partitions (insert_overwrite, dynamic partition overwrite). A model
    that merges into its own table cannot overwrite a path it reads: it is
    rebuilt whole (a table). With Delta (var spark_file_format: delta, on a
    cluster that has it) both merge by the key instead. -#}
{% macro spark__incremental_by(grain, unique_key, merges_held_rows) %}
    {%- set file_format = var('spark_file_format', 'parquet') -%}
    {%- if file_format in ['delta', 'iceberg', 'hudi'] -%}
        {{ return({
            'materialized': 'incremental', 'incremental_strategy': 'merge',
            'file_format': file_format, 'unique_key': unique_key}) }}
    {%- elif merges_held_rows -%}
        {{ return({'materialized': 'table', 'file_format': file_format}) }}
    {%- else -%}
        {{ return({
            'materialized': 'incremental', 'incremental_strategy': 'insert_overwrite',
            'file_format': file_format, 'partition_by': grain}) }}
    {%- endif -%}
{% endmacro %}

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
    {{ obs_plan_marker('runs', {
        'query': changed_runs_query(parts, own_parts) | trim,
        'predicate': runs_predicate('__obs_runs__') | trim}) }}
{%- else -%}
    {%- set changed = run_query(changed_runs_query(parts, own_parts)) -%}
    {%- if not changed.rows -%}
        false
    {%- else -%}
        {%- set runs = [] -%}
        {%- for row in changed.rows %}{% do runs.append(_quoted(row[0])) %}{% endfor -%}
        {{ runs_predicate(runs | join(", ")) }}
    {%- endif -%}
{%- endif -%}
{% endmacro %}

{% macro changed_runs_query(parts, own_parts) -%}
{#- The runs whose count of lake parts (in `parts`) differs from the
    `own_parts` this model holds for them, or that it does not hold. -#}
select now.run_id from (select run_id, max(run_parts) as run_parts from {{ parts }} as parts group by 1) as now left join (select run_id, max({{ own_parts }}) as run_parts from {{ this }} group by 1) as held using (run_id) where held.run_parts is distinct from now.run_parts order by 1
{%- endmacro %}

{% macro runs_predicate(runs) -%}
{#- The rows of these runs (`runs`: quoted run ids, comma-separated). -#}
upstream.run_id in ({{ runs }})
{%- endmacro %}

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

{% macro changed_rows(upstream, grain=['run_id', 'iteration'], upstream_time='ingested_at', own_time='ingested_through', lookup=none) %}
{#- Every row of `upstream` in a group (by `grain`) that received rows this
    model has not counted yet, when the model builds incrementally; every row
    otherwise. A run's watermark is the newest `own_time` this model holds
    for it; groups with rows published at or after it, or in the look-back window
    before it (a part published while the last build listed the lake), are
    recomputed whole, which is idempotent. A run the model does not hold yet
    is read whole. The groups are looked up first (in `lookup`, default
    `upstream`: a relation with the same grain and `upstream_time` columns
    that is cheaper to filter by time, such as the lake's view) and written
    into the query as constants, so DuckDB skips unchanged lake parts and
    row groups unread. -#}
select upstream.*
from {{ upstream }} as upstream
{%- if is_incremental() %}
where {{ changed_groups_predicate(lookup or upstream, grain, upstream_time, own_time) }}
{%- endif %}
{% endmacro %}

{% macro _quoted(value) -%}
'{{ value | replace("'", "''") }}'
{%- endmacro %}

{% macro changed_groups_predicate(lookup, grain, upstream_time, own_time) %}
{%- if not execute -%}
    true
{%- else -%}
    {{ groups_predicate(changed_groups(lookup, grain, upstream_time, own_time), grain) }}
{%- endif -%}
{% endmacro %}

{% macro changed_groups(lookup, grain, upstream_time='ingested_at', own_time='ingested_through') %}
{#- The groups (by `grain`: [run_id] or [run_id, <integer column>]) of
    `lookup` that received rows this model has not counted yet, as a dict
    run -> list of the second grain column's values (a list of none for
    grain [run_id]); see changed_rows. Empty outside execution. -#}
{%- if grain[0] != 'run_id' or grain | length > 2 -%}
    {{ exceptions.raise_compiler_error("changed_rows: grain is [run_id] or [run_id, <integer column>]") }}
{%- endif -%}
{%- set by_run = {} -%}
{%- if obs_plan_mode() -%}
    {#- obs's executor looks the groups up when it runs the model, by this
        query, each run's condition the run's rows since its oldest new part
        (`since`) or all of them (`whole`, a run that lost a part): see
        obs_plan_mode. -#}
    {{ return({'__obs_plan__': [{
        'lookup': lookup | string, 'grain': grain,
        'query': changed_groups_query(lookup, grain, '__obs_conditions__') | trim,
        'since': rows_since(upstream_time, '__obs_run__', '__obs_time__') | trim,
        'whole': rows_of_run('__obs_run__') | trim}]}) }}
{%- elif execute -%}
    {#- 1. each run's watermark, less the look-back window -#}
    {%- set held = run_query(
        "select run_id, cast(max(" ~ own_time ~ ") - "
        ~ interval_seconds(var('incremental_lookback_seconds')) ~ " as string) from " ~ this
        ~ " group by 1 order by 1"
    ) -%}
    {#- 2. the groups with rows after it (a run not held yet: all of it), as
        constants on the publish time so only new parts are read -#}
    {%- set recent = [] -%}
    {%- for row in held.rows -%}
        {%- do recent.append(rows_since(upstream_time, _quoted(row[0]), _quoted(row[1]), after=true) | trim) -%}
    {%- endfor -%}
    {%- if held.rows | length -%}
        {%- set known = [] -%}
        {%- for row in held.rows %}{% do known.append(_quoted(row[0])) %}{% endfor -%}
        {%- do recent.append("run_id not in (" ~ known | join(", ") ~ ")") -%}
    {%- else -%}
        {%- do recent.append("true") -%}
    {%- endif -%}
    {%- set changed = run_query(changed_groups_query(lookup, grain, recent | join(" or "))) -%}
    {%- for row in changed.rows -%}
        {%- do by_run.setdefault(row[0], []).append(row[1] if grain | length > 1 else none) -%}
    {%- endfor -%}
{%- endif -%}
{{ return(by_run) }}
{% endmacro %}

{% macro changed_groups_query(lookup, grain, conditions) -%}
{#- The groups (by `grain`) of `lookup`'s rows that meet `conditions`. -#}
select distinct {{ grain | join(", ") }} from {{ lookup }} where {{ conditions }} order by {{ range(1, grain | length + 1) | join(", ") }}
{%- endmacro %}

{% macro rows_since(upstream_time, run, time, after=false) -%}
{#- A run's rows published at or after `time` (`run`, `time`: quoted): the
    executor's oldest new part; `after`: only after it, dbt's watermark (the
    newest publish time the model holds, less the look-back window). -#}
(run_id = {{ run }} and {{ upstream_time }} {{ '>' if after else '>=' }} timestamp {{ time }})
{%- endmacro %}

{% macro rows_of_run(run) -%}
{#- Every row of a run (`run`: quoted). -#}
(run_id = {{ run }})
{%- endmacro %}

{% macro merge_groups(first, second) %}
{#- The union of two results of changed_groups (same grain). -#}
{%- if '__obs_plan__' in first or '__obs_plan__' in second -%}
    {{ return({'__obs_plan__': first.get('__obs_plan__', []) + second.get('__obs_plan__', [])}) }}
{%- endif -%}
{%- set merged = {} -%}
{%- for by_run in [first, second] -%}
    {%- for run, values in by_run.items() -%}
        {%- for value in values -%}
            {%- if value not in merged.setdefault(run, []) %}{% do merged[run].append(value) %}{% endif -%}
        {%- endfor -%}
    {%- endfor -%}
{%- endfor -%}
{{ return(merged) }}
{% endmacro %}

{% macro groups_predicate(by_run, grain, alias='upstream') %}
{#- A predicate on `alias`'s columns named by `grain` that holds for the
    groups of `by_run` (a result of changed_groups); false when it is empty. -#}
{%- if '__obs_plan__' in by_run -%}
    {{ obs_plan_marker('groups', {
        'specs': by_run['__obs_plan__'], 'grain': grain, 'alias': alias,
        'term': group_term(alias, grain, '__obs_run__', '__obs_values__') | trim}) }}
{%- elif not by_run -%}
    false
{%- else -%}
    (
    {%- for run, values in by_run.items() %}
        {{ "or " if not loop.first }}{{ group_term(alias, grain, _quoted(run), values | join(", ")) }}
    {%- endfor %}
    )
{%- endif -%}
{% endmacro %}

{% macro group_term(alias, grain, run, values) -%}
{#- One run's groups: its rows (`run`: quoted) whose second grain column is
    among `values` (comma-separated), or all of them for grain [run_id]. -#}
({{ alias }}.{{ grain[0] }} = {{ run }}
{%- if grain | length > 1 %} and {{ alias }}.{{ grain[1] }} in ({{ values }}){% endif %})
{%- endmacro %}

{% macro newest_rows(relation, partition_by, newest_by, keep_ties=false) %}
{#- A select of the newest row of each group of `relation` (a CTE name):
    groups by the `partition_by` columns, newest by the `newest_by` columns
    (largest first, in order). keep_ties: every row that ties with the newest
    on all of `newest_by` (a part landed again is read whole), else one of
    them. -#}
    {%- if not partition_by or not newest_by -%}
        {{ exceptions.raise_compiler_error("newest_rows: partition_by and newest_by are lists of columns") }}
    {%- endif -%}
    {{ return(adapter.dispatch('newest_rows', 'obs')(relation, partition_by, newest_by, keep_ties)) }}
{% endmacro %}

{#- Without QUALIFY (Spark 4.0): keep_ties joins each row with its group's
    largest `newest_by` (a struct compares field by field); else max_by
    takes the whole row at it. -#}
{% macro default__newest_rows(relation, partition_by, newest_by, keep_ties) %}
    {%- if keep_ties %}
    select {{ relation }}.*
    from {{ relation }}
    inner join (
        select
            {%- for column in partition_by %}
            {{ column }},
            {%- endfor %}
            max(struct({{ newest_by | join(', ') }})) as newest_key
        from {{ relation }}
        group by {{ partition_by | join(', ') }}
    ) as newest_keys
        on
        {%- for column in partition_by %}
            {{ relation }}.{{ column }} <=> newest_keys.{{ column }} and
        {%- endfor %}
            struct({{ relation }}.{{ newest_by | join(', ' ~ relation ~ '.') }})
            = newest_keys.newest_key
    {%- else %}
    select newest_row.*
    from (
        select max_by(struct(*), struct({{ newest_by | join(', ') }})) as newest_row
        from {{ relation }}
        group by {{ partition_by | join(', ') }}
    )
    {%- endif %}
{% endmacro %}

{% macro duckdb__newest_rows(relation, partition_by, newest_by, keep_ties) %}
    select *
    from {{ relation }}
    qualify {{ 'dense_rank' if keep_ties else 'row_number' }}() over (
        partition by {{ partition_by | join(', ') }}
        order by {{ newest_by | join(' desc, ') }} desc
    ) = 1
{% endmacro %}

{% macro newly_published(upstream_time, own_time) %}
{#- A predicate on `upstream_time` that holds for the rows published since
    this model last read the lake, when it builds incrementally: in a dbt
    run, at or after its newest `own_time` less the look-back window
    (incremental_lookback_seconds); in obs's executor, from the oldest lake
    part published since the listing its last build started from (exact; see
    obs_plan_mode). `true` when the model holds no rows. -#}
    {%- if obs_plan_mode() -%}
        {{ obs_plan_marker('since', {'predicate': published_since(upstream_time, '__obs_time__') | trim}) }}
    {%- elif execute -%}
        {%- set watermark = run_query(
            "select cast(max(" ~ own_time ~ ") - "
            ~ interval_seconds(var('incremental_lookback_seconds')) ~ " as string) from " ~ this
        ).columns[0].values()[0] -%}
        {%- if watermark is none -%}
            true
        {%- else -%}
            {{ published_since(upstream_time, _quoted(watermark), after=true) }}
        {%- endif -%}
    {%- else -%}
        true
    {%- endif -%}
{% endmacro %}

{% macro published_since(upstream_time, time, after=false) -%}
{#- The rows published at or after `time` (quoted); `after`: only after it
    (dbt's watermark, as in rows_since). -#}
{{ upstream_time }} {{ '>' if after else '>=' }} timestamp {{ time }}
{%- endmacro %}
