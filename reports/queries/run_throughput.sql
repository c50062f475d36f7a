-- `obs analyze`: the run's throughput over its steps, over finite values only
-- (NaN and Infinity read as null); `steps` counts the rows.
with

throughput as (
    select
        case when isfinite(trajectories) then trajectories end as trajectories,
        case
            when isfinite(rollout_time_s) then rollout_time_s
        end as rollout_time_s,
        case
            when isfinite(training_time_s) then training_time_s
        end as training_time_s,
        case
            when isfinite(training_rollout_ratio) then training_rollout_ratio
        end as training_rollout_ratio,
        is_training_bound,
        case
            when isfinite(pipeline_overlap_s) then pipeline_overlap_s
        end as pipeline_overlap_s
    from fct_run_throughput
    where run_id = $run
)

select
    count(*) as steps,
    sum(trajectories) as trajectories,
    sum(rollout_time_s) as rollout_time_s,
    sum(training_time_s) as training_time_s,
    sum(trajectories) filter (where rollout_time_s is not null)
    / nullif(
        sum(rollout_time_s) filter (where trajectories is not null), 0
    ) as trajectories_per_second,
    avg(training_rollout_ratio) as mean_training_rollout_ratio,
    avg(is_training_bound::int) as training_bound_share,
    sum(pipeline_overlap_s) as pipeline_overlap_total_s
from throughput
