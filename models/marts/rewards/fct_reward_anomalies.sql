{# One row per run and step with a finite mean reward: the step's mean
   reward (of the per-sample totals) against the previous anomaly_lookback
   (50) steps' mean and population std, once anomaly_min_history (10) of
   them exist. z_score = (mean_reward - historical_mean) / historical_std
   (null when the history is shorter or does not vary); an anomaly when
   |z_score| > anomaly_z (3), as the GRPO reward monitor flags them. #}
with

steps as (
    select
        run_id,
        step,
        mean as mean_reward
    from {{ ref('fct_reward_steps') }}
    where {{ is_finite('mean') }}
),

history as (
    select
        *,
        avg(mean_reward) over earlier as historical_mean,
        stddev_pop(mean_reward) over earlier as historical_std,
        count(mean_reward) over earlier as history_steps
    from steps
    window earlier as (
        partition by run_id order by step
        rows between {{ var('anomaly_lookback') }} preceding and 1 preceding
    )
),

final as (
    select
        ---------- ids
        run_id,
        step,

        ---------- numerics
        mean_reward,
        historical_mean,
        historical_std,
        history_steps,
        case
            when history_steps >= {{ var('anomaly_min_history') }} and historical_std > 0
                then (mean_reward - historical_mean) / historical_std
        end as z_score,

        ---------- booleans
        coalesce(
            history_steps >= {{ var('anomaly_min_history') }} and historical_std > 0
            {#- exact: the z-score meets anomaly_z #}
            and {{ exact_float(
                'abs(mean_reward - historical_mean) / historical_std'
            ) }} > {{ var('anomaly_z') }},
            false
        ) as is_anomaly

    from history
)

select * from final
