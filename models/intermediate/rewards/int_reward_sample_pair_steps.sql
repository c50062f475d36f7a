{{ config(incremental_by(['run_id', 'step'])) }}
{# For each step and each pair of reward functions (function_a <=
   function_b, a function with itself included), the co-moment of their
   per-sample rewards about the step's means, sum_i (a_i - mean_a)(b_i -
   mean_b), over the samples both scored. Pooled over steps these give the
   run's per-sample covariances exactly (fct_reward_correlations,
   fct_reward_function_importance), without reading the samples again.
   Built by step. #}
with

samples as (
    {{
        changed_rows(ref('int_reward_samples'), ['run_id', 'step'], upstream_time='ingested_through')
    }}
),

paired as (
    select
        a.run_id,
        a.step,
        a.reward_function as function_a,
        b.reward_function as function_b,
        a.reward as reward_a,
        b.reward as reward_b,
        greatest(a.ingested_through, b.ingested_through) as ingested_through
    from samples as a
    inner join samples as b
        on
            a.run_id = b.run_id
            and a.step = b.step
            and a.sample_idx = b.sample_idx
            and a.reward_function <= b.reward_function
),

final as (
    select
        ---------- ids
        run_id,
        step,
        function_a,
        function_b,

        ---------- numerics
        count(*) as n,
        {{ exact_float('avg(reward_a)') }} as mean_a,
        {{ exact_float('avg(reward_b)') }} as mean_b,
        {{ exact_float('covar_pop(reward_a, reward_b) * count(*)') }} as comoment,

        ---------- timestamps
        max(ingested_through) as ingested_through
    from paired
    group by 1, 2, 3, 4
)

select * from final
