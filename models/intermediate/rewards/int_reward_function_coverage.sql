{{ config(incremental_by(['run_id'])) }}
{# How much of its observed range each reward function uses over the run's
   pooled samples (every sample of every step): coverage = min(1, IQR /
   range), IQR = P75 - P25 (linear interpolation, as numpy's percentiles);
   null when the function has one sample or no range. Built by run: a run
   whose samples changed is read again whole (quantiles do not pool). #}
with

samples as (
    {{ changed_rows(ref('int_reward_samples'), ['run_id'], upstream_time='ingested_through') }}
),

final as (
    select
        ---------- ids
        run_id,
        reward_function,

        ---------- numerics
        count(*) as n,
        min(reward) as min,
        max(reward) as max,
        {{ quantile('reward', 0.25) }} as p25,
        {{ quantile('reward', 0.75) }} as p75,
        case
            when count(*) > 1 and max(reward) > min(reward)
                then least(
                    1.0,
                    ({{ quantile('reward', 0.75) }} - {{ quantile('reward', 0.25) }})
                    / (max(reward) - min(reward))
                )
        end as coverage,

        ---------- timestamps
        max(ingested_through) as ingested_through
    from samples
    group by 1, 2
)

select * from final
