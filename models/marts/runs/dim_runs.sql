{# One row per tracker run: its newest attributes (each the latest non-empty
   value any ingest gave), with how far its history reaches. #}
with

runs as (
    select * from {{ ref('stg_runs') }}
),

{# the history mart, not the lake: it holds one row per point already #}
metrics as (
    select * from {{ ref('fct_metric_history') }}
),

attributes as (
    select
        run_id,
        arg_max(source, ingested_at) as source,
        list(distinct source order by source) as sources,
        arg_max(project, ingested_at) filter (where project is not null) as project,
        arg_max(entity, ingested_at) filter (where entity is not null) as entity,
        arg_max(name, ingested_at) filter (where name is not null) as name,
        arg_max(state, ingested_at) filter (where state is not null) as state,
        arg_max(tags, ingested_at) filter (where len(tags) > 0) as tags,
        min(created_at) as created_at,
        arg_max(config, ingested_at) filter (where config::varchar <> '{}') as config,
        arg_max(summary, ingested_at) filter (where summary::varchar <> '{}') as summary,
        arg_max(artifacts, ingested_at) filter (where artifacts::varchar <> '[]') as artifacts,
        max(ingested_at) as updated_at
    from runs
    group by 1
),

reach as (
    select
        run_id,
        count(distinct step) as steps,
        min(step) as first_step,
        max(step) as last_step,
        count(distinct metric) as metrics,
        count(*) as points,
        min(wall_time) as first_logged_at,
        max(wall_time) as last_logged_at
    from metrics
    group by 1
),

final as (
    select
        attributes.run_id,
        attributes.source,
        attributes.sources,
        attributes.project,
        attributes.entity,
        coalesce(attributes.name, attributes.run_id) as name,
        attributes.state,
        coalesce(attributes.tags, []::varchar[]) as tags,
        attributes.created_at,
        coalesce(reach.steps, 0) as steps,
        reach.first_step,
        reach.last_step,
        coalesce(reach.metrics, 0) as metrics,
        coalesce(reach.points, 0) as points,
        reach.first_logged_at,
        reach.last_logged_at,
        coalesce(attributes.config, '{}'::json) as config,
        coalesce(attributes.summary, '{}'::json) as summary,
        coalesce(attributes.artifacts, '[]'::json) as artifacts,
        attributes.updated_at
    from attributes
    left join reach using (run_id)
)

select * from final
