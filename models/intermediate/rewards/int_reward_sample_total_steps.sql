{{ config(incremental_by(['run_id', 'step'])) }}
{# For each step and reward function, the co-moments of the function's
   per-sample rewards r_i with the per-sample reward the trainer optimised,
   R_i = sum_f w_f r_f,i (the weights of int_reward_weights, as
   int_reward_sample_steps), over the samples the function scored:
   sum_i (r_i - mean_r)(R_i - mean_R), and each with itself. Pooled over
   steps they give fct_reward_function_importance's correlation_with_total
   exactly, for every function: one pass over the samples, linear in the
   run's functions (no pairs of functions). Built by step, from the steps
   of int_reward_samples read again, and every step of a run whose weights
   changed (weights_key). #}
with

weights as (
    select
        run_id,
        reward_function,
        weight
    from {{ ref('int_reward_weights') }}
),

weight_keys as (
    select
        run_id,
        {{ stable_hash(ordered_string_agg(
            "concat(reward_function, '=', cast(weight as string))", "';'", ['reward_function']
        )) }} as weights_key
    from weights
    group by 1
),

samples as (
    select
        upstream.run_id,
        upstream.step,
        upstream.sample_idx,
        upstream.reward_function,
        upstream.reward,
        upstream.ingested_through
    from {{ ref('int_reward_samples') }} as upstream
    {%- if is_incremental() %}
    where
        {{ changed_groups_predicate(
            ref('int_reward_samples'), ['run_id', 'step'], 'ingested_through', 'ingested_through'
        ) }}
        or upstream.run_id in (
            select weight_keys.run_id
            from weight_keys
            left join (
                select distinct
                    held.run_id,
                    held.weights_key
                from {{ this }} as held
            ) as held on weight_keys.run_id = held.run_id
            where held.weights_key is distinct from weight_keys.weights_key
        )
    {%- endif %}
),

per_sample as (
    select
        samples.run_id,
        samples.step,
        samples.sample_idx,
        sum(coalesce(weights.weight, 1.0) * samples.reward) as total_reward
    from samples
    left join weights
        on samples.run_id = weights.run_id and samples.reward_function = weights.reward_function
    group by 1, 2, 3
),

with_total as (
    select
        samples.run_id,
        samples.step,
        samples.reward_function,
        samples.reward,
        per_sample.total_reward,
        samples.ingested_through
    from samples
    inner join per_sample
        on
            samples.run_id = per_sample.run_id
            and samples.step = per_sample.step
            and samples.sample_idx = per_sample.sample_idx
),

final as (
    select
        ---------- ids
        with_total.run_id,
        with_total.step,
        with_total.reward_function,

        ---------- strings
        any_value(weight_keys.weights_key) as weights_key,

        ---------- numerics
        count(*) as n,
        avg(with_total.reward) as mean_reward,
        avg(with_total.total_reward) as mean_total,
        {#- a co-moment within the float noise of its sums (n times the
            largest |x| |y|, times 1e-12) is 0: the engines' algorithms leave
            different noise there (a constant's 0 read as -3e-17) -#}
        {%- set r, t = 'with_total.reward', 'with_total.total_reward' %}
        {%- for name, expression, scale in [
            ('comoment', 'covar_pop(' ~ r ~ ', ' ~ t ~ ')', 'max(abs(' ~ r ~ ')) * max(abs(' ~ t ~ '))'),
            ('reward_comoment', 'var_pop(' ~ r ~ ')', 'max(abs(' ~ r ~ ')) * max(abs(' ~ r ~ '))'),
            ('total_comoment', 'var_pop(' ~ t ~ ')', 'max(abs(' ~ t ~ ')) * max(abs(' ~ t ~ '))'),
        ] %}
            {{ 'case when abs(' ~ expression ~ ') <= 1e-12 * ' ~ scale
                ~ ' then 0.0 else ' ~ expression ~ ' * count(*) end' }} as {{ name }},
        {%- endfor %}

        ---------- timestamps
        max(with_total.ingested_through) as ingested_through
    from with_total
    left join weight_keys on with_total.run_id = weight_keys.run_id
    group by 1, 2, 3
)

select * from final
