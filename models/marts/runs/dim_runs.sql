{# One row per tracker run: its newest attributes (int_run_attributes), with
   how far its history reaches. A run no source states a state for is
   unknown (with when its data last landed, not a guess); it was created at
   the earliest clock time any source carries: the start time a tracker
   records, else the wall time of its first logged point. #}
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
        max(wall_time) as last_logged_at,
        max(ingested_at) as last_point_landed_at
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
        coalesce(attributes.state, 'unknown') as state,
        attributes.state_source,
        attributes.tags,
        {#- least and greatest skip nulls on DuckDB and Spark alike #}
        least(attributes.created_at, reach.first_logged_at) as created_at,
        case
            when
                attributes.created_at is not null
                and (
                    reach.first_logged_at is null
                    or attributes.created_at <= reach.first_logged_at
                )
                then 'run start'
            when reach.first_logged_at is not null then 'first logged point'
        end as created_from,
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
        attributes.updated_at,
        greatest(
            attributes.updated_at, reach.last_point_landed_at
        ) as last_landed_at
    from attributes
    left join reach using (run_id)
)

select * from final
