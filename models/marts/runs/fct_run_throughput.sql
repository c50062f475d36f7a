{# Throughput per training step (how fast rollouts turn into trajectories)
   and whether the step waited on training or on rollouts. Pipeline overlap is
   reported as logged, never recomputed: the trainer's definition of "time
   saved" is its own. Ratios need finite inputs and a positive rollout time. #}
with

steps as (
    select * from {{ ref('int_run_steps') }}
),

logged as (
    select
        run_id,
        step,
        trajectories,
        rollout_time_s,
        training_time_s,
        pipeline_overlap_s
    from steps
    where
        trajectories is not null
        or rollout_time_s is not null
        or training_time_s is not null
        or pipeline_overlap_s is not null
),

usable as (
    select
        *,
        {{ is_finite('rollout_time_s') }} and rollout_time_s > 0 as has_rollout_time,
        case when {{ is_finite('trajectories') }} then trajectories end as finite_trajectories,
        case
            when {{ is_finite('rollout_time_s') }} and rollout_time_s > 0 then rollout_time_s
        end as finite_rollout_time_s
    from logged
),

final as (
    select
        run_id,
        step,
        trajectories,
        rollout_time_s,
        training_time_s,
        pipeline_overlap_s,
        case
            when has_rollout_time and {{ is_finite('trajectories') }}
                then trajectories / rollout_time_s
        end as trajectories_per_second,
        case
            when has_rollout_time and {{ is_finite('training_time_s') }}
                then training_time_s / rollout_time_s
        end as training_rollout_ratio,
        case
            when has_rollout_time and {{ is_finite('training_time_s') }}
                then training_time_s / rollout_time_s > 1
        end as is_training_bound,
        {#- The run-level rate so far (Σ trajectories / Σ rollout time), over the
            steps that logged both. #}
        sum(case when has_rollout_time then finite_trajectories end) over running
        / sum(
            case when finite_trajectories is not null then finite_rollout_time_s end
        ) over running as cumulative_trajectories_per_second
    from usable
    window running as (
        partition by run_id order by step rows between unbounded preceding and current row
    )
)

select * from final
