-- `obs compare`: the throughput of $runs, over finite values only (NaN and
-- Infinity read as null).
with

throughput as (
    select
        run_id,
        case when isfinite(trajectories) then trajectories end as trajectories,
        case
            when isfinite(rollout_time_s) then rollout_time_s
        end as rollout_time_s,
        case
            when isfinite(training_time_s) then training_time_s
        end as training_time_s
    from fct_run_throughput
    where list_contains($runs, run_id)
)

select
    run_id,
    sum(trajectories) filter (where rollout_time_s is not null)
    / nullif(
        sum(rollout_time_s) filter (where trajectories is not null), 0
    ) as trajectories_per_second,
    sum(training_time_s) as training_time_s
from throughput
group by 1
order by 1
