{# The rows of fct_rollout_reliability (a view of this table).
   Infrastructure health per training step: failed rollouts, the slowest
   game and the slowest volume reload, each timing scored as the findings
   score it (int_metric_scores): in log space against the median of the
   `spike_window` points before it and the series' own noise. A z-score
   needs `spike_min_history` prior points and a series that varies; before
   that it is null, so a run's first steps never raise a spike. #}
with

scored as (
    select * from {{ ref('int_metric_scores') }}
    where metric in ('max_total_s', 'max_volume_reload_s')
),

steps as (
    select * from {{ ref('int_run_steps') }}
    where
        failed_rollouts is not null
        or max_total_s is not null
        or max_volume_reload_s is not null
),

final as (
    select
        steps.run_id,
        steps.step,
        steps.failed_rollouts,
        steps.max_total_s,
        steps.max_volume_reload_s,
        total.z as max_total_s_z,
        reload.z as max_volume_reload_s_z,
        total.trailing_median as max_total_s_trailing_median,
        reload.trailing_median as max_volume_reload_s_trailing_median,
        coalesce(total.trailing_points, 0) as max_total_s_trailing_points,
        coalesce(reload.trailing_points, 0) as max_volume_reload_s_trailing_points,
        case
            when {{ is_finite('steps.failed_rollouts') }}
                then steps.failed_rollouts > {{ var('failed_rollouts_max') }}
        end as is_failure,
        coalesce(total.z > {{ var('spike_z') }}, false) as is_total_spike,
        coalesce(reload.z > {{ var('spike_z') }}, false) as is_reload_spike
    from steps
    left join scored as total
        on
            steps.run_id = total.run_id
            and steps.step = total.step
            and total.metric = 'max_total_s'
    left join scored as reload
        on
            steps.run_id = reload.run_id
            and steps.step = reload.step
            and reload.metric = 'max_volume_reload_s'
)

select * from final
