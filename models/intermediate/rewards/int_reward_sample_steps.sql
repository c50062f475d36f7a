{{ config(incremental_by(['run_id', 'step'])) }}
{# The per-sample total reward R_i (the sum over the step's reward functions)
   and its statistics at each step: n, mean, population std and variance,
   min, max, total, and the reward monitor's entropy: the shifted totals as a
   probability vector over the samples, p_i = (R_i - min R) / sum_j (R_j -
   min R) + 1e-10, H = -sum_i p_i ln p_i; 0 when n <= 1 or the shifted sum
   is 0. Built by step, from the steps of int_reward_samples read again. #}
with

samples as (
    {{
        changed_rows(ref('int_reward_samples'), ['run_id', 'step'], upstream_time='ingested_through')
    }}
),

per_sample as (
    select
        run_id,
        step,
        sample_idx,
        {{ exact_float('sum(reward)') }} as total_reward,
        max(ingested_through) as ingested_through
    from samples
    group by 1, 2, 3
),

shifted as (
    select
        *,
        total_reward - min(total_reward) over (partition by run_id, step) as shifted_reward
    from per_sample
),

normalised as (
    select
        *,
        sum(shifted_reward) over (partition by run_id, step) as shifted_sum
    from shifted
),

final as (
    select
        ---------- ids
        run_id,
        step,

        ---------- numerics
        count(*) as n,
        {{ exact_float('avg(total_reward)') }} as mean,
        {{ exact_float('stddev_pop(total_reward)') }} as std,
        min(total_reward) as min,
        max(total_reward) as max,
        {{ exact_float('sum(total_reward)') }} as total,
        {{ exact_float('var_pop(total_reward)') }} as variance,
        case
            when count(*) > 1 and any_value(shifted_sum) > 0
                then {{ exact_float('-sum(
                    (shifted_reward / shifted_sum + 1e-10)
                    * ln(shifted_reward / shifted_sum + 1e-10)
                )') }}
            else 0.0
        end as entropy,

        ---------- timestamps
        max(ingested_through) as ingested_through
    from normalised
    group by 1, 2
)

select * from final
