-- `obs analyze`: the run's rollout failures and times over its steps, over
-- finite values only; `steps` counts the rows.
with

reliability as (
    select
        case
            when isfinite(failed_rollouts) then failed_rollouts
        end as failed_rollouts,
        is_failure,
        case when isfinite(max_total_s) then max_total_s end as max_total_s,
        case
            when isfinite(max_volume_reload_s) then max_volume_reload_s
        end as max_volume_reload_s,
        is_total_spike,
        is_reload_spike
    from fct_rollout_reliability
    where run_id = $run
)

select
    count(*) as steps,
    sum(failed_rollouts) as failed_rollouts,
    count(*) filter (where is_failure) as steps_with_failures,
    max(max_total_s) as worst_total_s,
    max(max_volume_reload_s) as worst_reload_s,
    count(*) filter (where is_total_spike) as total_time_spikes,
    count(*) filter (where is_reload_spike) as reload_spikes
from reliability
