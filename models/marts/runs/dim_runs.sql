{# One row per tracker run: its newest attributes (int_run_attributes), with
   how far its history reaches. #}
with

attributes as (
    select * from {{ ref('int_run_attributes') }}
),

{# the history's table, not the lake: it holds one row per point already #}
metrics as (
    select * from {{ ref('int_metric_history') }}
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
        attributes.name,
        attributes.state,
        attributes.tags,
        attributes.created_at,
        coalesce(reach.steps, 0) as steps,
        reach.first_step,
        reach.last_step,
        coalesce(reach.metrics, 0) as metrics,
        coalesce(reach.points, 0) as points,
        reach.first_logged_at,
        reach.last_logged_at,
        attributes.config,
        attributes.summary,
        attributes.artifacts,
        attributes.updated_at
    from attributes
    left join reach using (run_id)
)

select * from final
