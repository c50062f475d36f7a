{{ config(incremental_by(['run_id', 'step'])) }}
{# For each step and each pair of a run's paired reward functions
   (int_reward_pair_functions: at most reward_pair_max_functions of them,
   none past reward_pair_function_limit; function_a <= function_b, a
   function with itself included), the co-moment of their per-sample
   rewards about the step's means, sum_i (a_i - mean_a)(b_i - mean_b),
   over the samples both scored. Pooled over steps these give the run's
   per-sample covariances exactly (fct_reward_correlations), without
   reading the samples again. Built by step, from the steps of
   int_reward_samples read again, and every step of a run whose paired
   functions changed (pairs_key: the functions the rows were paired
   over). #}
with

paired_functions as (
    select
        run_id,
        reward_function
    from {{ ref('int_reward_pair_functions') }}
    where is_paired
),

pair_keys as (
    select
        run_id,
        {{ stable_hash(ordered_string_agg(
            'reward_function', "';'", ['reward_function']
        )) }} as pairs_key
    from paired_functions
    group by 1
),

changed as (
    select upstream.*
    from {{ ref('int_reward_samples') }} as upstream
    {%- if is_incremental() %}
    where
        {{ changed_groups_predicate(
            ref('int_reward_samples'), ['run_id', 'step'], 'ingested_through', 'ingested_through'
        ) }}
        or upstream.run_id in (
            select pair_keys.run_id
            from pair_keys
            left join (
                select distinct
                    held.run_id,
                    held.pairs_key
                from {{ this }} as held
            ) as held on pair_keys.run_id = held.run_id
            where held.pairs_key is distinct from pair_keys.pairs_key
        )
    {%- endif %}
),

samples as (
    select
        changed.run_id,
        changed.step,
        changed.sample_idx,
        changed.reward_function,
        changed.reward,
        changed.ingested_through
    from changed
    inner join paired_functions
        on
            changed.run_id = paired_functions.run_id
            and changed.reward_function = paired_functions.reward_function
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
        paired.run_id,
        paired.step,
        paired.function_a,
        paired.function_b,

        ---------- strings
        any_value(pair_keys.pairs_key) as pairs_key,

        ---------- numerics
        count(*) as n,
        avg(paired.reward_a) as mean_a,
        avg(paired.reward_b) as mean_b,
        covar_pop(paired.reward_a, paired.reward_b) * count(*) as comoment,

        ---------- timestamps
        max(paired.ingested_through) as ingested_through
    from paired
    inner join pair_keys on paired.run_id = pair_keys.run_id
    group by 1, 2, 3, 4
)

select * from final
