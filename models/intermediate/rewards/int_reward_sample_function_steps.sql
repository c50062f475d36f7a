{{ config(incremental_by(['run_id', 'step'])) }}
{# Each reward function's per-sample statistics at each step (population
   std and variance, as numpy's defaults). Built by step, from the steps of
   int_reward_samples read again since the last build. #}
with

samples as (
    {{
        changed_rows(ref('int_reward_samples'), ['run_id', 'step'], upstream_time='ingested_through')
    }}
),

final as (
    select
        ---------- ids
        run_id,
        step,
        reward_function,

        ---------- strings
        any_value(source) as source,

        ---------- numerics
        count(*) as n,
        avg(reward) as mean,
        stddev_pop(reward) as std,
        min(reward) as min,
        max(reward) as max,
        sum(reward) as total,
        var_pop(reward) as variance,
        {#- the weights the step's rollouts name (int_reward_weights takes
            them when they agree) -#}
        max(source_weight) as source_weight,
        min(source_weight) as lowest_source_weight,
        max(function_position) as function_position,

        ---------- timestamps
        max(ingested_through) as ingested_through
    from samples
    group by 1, 2, 3
)

select * from final
