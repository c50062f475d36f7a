{# Infrastructure health per training step: failed rollouts, the slowest
   game and the slowest volume reload, each timing scored against its own
   trailing window (the `spike_window` finite points before it). A z-score
   needs `spike_min_history` prior points and a window that varies; before
   that it is null, so a run's first steps never raise a spike. #}
with

history as (
    select * from {{ ref('fct_metric_history') }}
    where canonical_metric in ('max_total_s', 'max_volume_reload_s')
),

steps as (
    select * from {{ ref('int_run_steps') }}
    where failed_rollouts is not null
        or max_total_s is not null
        or max_volume_reload_s is not null
),

trailing_stats as (
    {# Each finite timing with the mean, spread and size of the window of
       points before it. #}
    select
        run_id,
        step,
        canonical_metric,
        value,
        avg(value) over prior as trailing_mean,
        stddev_samp(value) over prior as trailing_std,
        count(value) over prior as trailing_points
    from history
    where isfinite(value)
    window prior as (
        partition by run_id, canonical_metric
        order by step
        rows between {{ var('spike_window') }} preceding and 1 preceding
    )
),

scored as (
    select
        run_id,
        step,
        canonical_metric,
        trailing_mean,
        trailing_points,
        case
            when trailing_points >= {{ var('spike_min_history') }} and trailing_std > 0
                then (value - trailing_mean) / trailing_std
        end as z
    from trailing_stats
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
        total.trailing_mean as max_total_s_trailing_mean,
        reload.trailing_mean as max_volume_reload_s_trailing_mean,
        coalesce(total.trailing_points, 0) as max_total_s_trailing_points,
        coalesce(reload.trailing_points, 0) as max_volume_reload_s_trailing_points,
        case
            when isfinite(steps.failed_rollouts)
                then steps.failed_rollouts > {{ var('failed_rollouts_max') }}
        end as is_failure,
        coalesce(total.z > {{ var('spike_z') }}, false) as is_total_spike,
        coalesce(reload.z > {{ var('spike_z') }}, false) as is_reload_spike
    from steps
    left join scored as total
        on steps.run_id = total.run_id
        and steps.step = total.step
        and total.canonical_metric = 'max_total_s'
    left join scored as reload
        on steps.run_id = reload.run_id
        and steps.step = reload.step
        and reload.canonical_metric = 'max_volume_reload_s'
)

select * from final
