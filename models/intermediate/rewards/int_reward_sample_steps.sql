{{ config(incremental_by(['run_id', 'step'])) }}
{# The per-sample reward the trainer optimised, R_i = sum_f w_f r_f,i (the
   weights of int_reward_weights), and its statistics at each step: n, mean,
   population std and variance, min, max, total, and the reward monitor's
   entropy: the shifted totals as a probability vector over the samples,
   p_i = (R_i - min R) / sum_j (R_j - min R) + 1e-10, H = -sum_i p_i ln p_i;
   0 when n <= 1 or the shifted sum is 0. seed_mean is the reward monitor's
   own, of the plain sum (equal to mean when every weight is 1). Built by
   step, from the steps of int_reward_samples read again, and every step of
   a run whose weights changed (weights_key: the md5 of the weights the
   rows were computed with, function=weight by name; only the incremental
   check reads it, and a run of many functions would repeat their whole
   list on every step's row). #}
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
    select upstream.*
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
        sum(coalesce(weights.weight, 1.0) * samples.reward) as total_reward,
        sum(samples.reward) as seed_total_reward,
        max(samples.ingested_through) as ingested_through
    from samples
    left join weights
        on samples.run_id = weights.run_id and samples.reward_function = weights.reward_function
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
        shifted.*,
        weight_keys.weights_key,
        sum(shifted.shifted_reward) over (
            partition by shifted.run_id, shifted.step
        ) as shifted_sum
    from shifted
    left join weight_keys on shifted.run_id = weight_keys.run_id
),

final as (
    select
        ---------- ids
        run_id,
        step,

        ---------- strings
        any_value(weights_key) as weights_key,

        ---------- numerics
        count(*) as n,
        avg(total_reward) as mean,
        avg(seed_total_reward) as seed_mean,
        stddev_pop(total_reward) as std,
        min(total_reward) as min,
        max(total_reward) as max,
        sum(total_reward) as total,
        var_pop(total_reward) as variance,
        case
            when count(*) > 1 and any_value(shifted_sum) > 0
                then -sum(
                    (shifted_reward / shifted_sum + 1e-10)
                    * ln(shifted_reward / shifted_sum + 1e-10)
                )
            else 0.0
        end as entropy,

        ---------- timestamps
        max(ingested_through) as ingested_through
    from normalised
    group by 1, 2
)

select * from final
