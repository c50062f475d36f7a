{# The rows of fct_reward_steps (a view of this table).
   One row per run and step with reward data: the statistics of the
   per-sample reward the trainer optimised, R_i = sum_f w_f r_f,i (the
   weights of int_reward_weights; seed_mean is the plain sum's mean, the
   reward monitor's own),
   the training dynamics logged at the step, and the performance metric.
   Basis 'samples' where the step has per-sample rewards, else 'logged': the
   logged mean (else the weighted sum of the logged function means, which is
   the mean of R exactly), std, min, max, total, entropy and variance as the
   trainer logged them; a run that has per-sample rewards at some steps
   takes a logged step only when the step logged its reward functions (a
   total alone may be another reward's). signal_to_noise = |mean| / std, 0 when std = 0;
   is_zero_variance says which zeros are the batch giving no signal. #}
with

samples as (
    select
        run_id,
        step,
        n,
        mean,
        seed_mean,
        std,
        min,
        max,
        total,
        variance,
        entropy,
        'samples' as basis
    from {{ ref('int_reward_sample_steps') }}
),

weights as (
    select
        run_id,
        reward_function,
        weight
    from {{ ref('int_reward_weights') }}
),

logged_values as (
    select
        logged.run_id,
        logged.step,
        logged.reward_function,
        logged.measure,
        logged.value,
        coalesce(weights.weight, 1.0) as weight
    from {{ ref('int_reward_logged') }} as logged
    left join weights
        on logged.run_id = weights.run_id and logged.reward_function = weights.reward_function
),

logged_steps as (
    select
        run_id,
        step,
        max(value) filter (where measure = 'mean' and reward_function is null) as mean,
        sum(weight * value) filter (
            where measure = 'mean' and reward_function is not null
        ) as function_mean_sum,
        sum(value) filter (
            where measure = 'mean' and reward_function is not null
        ) as seed_function_mean_sum,
        max(value) filter (where measure = 'std' and reward_function is null) as std,
        max(value) filter (where measure = 'min' and reward_function is null) as min,
        max(value) filter (where measure = 'max' and reward_function is null) as max,
        max(value) filter (where measure = 'total' and reward_function is null) as total,
        max(value) filter (where measure = 'variance' and reward_function is null) as variance,
        max(value) filter (where measure = 'entropy' and reward_function is null) as entropy,
        max(value) filter (where measure = 'signal_to_noise' and reward_function is null)
            as logged_signal_to_noise,
        max(value) filter (where measure = 'batch_size') as batch_size,
        max(value) filter (where measure = 'num_generations') as num_generations,
        max(value) filter (where measure = 'kl_divergence') as kl_divergence,
        max(value) filter (where measure = 'policy_entropy') as policy_entropy,
        max(value) filter (where measure = 'advantage_mean') as advantage_mean,
        max(value) filter (where measure = 'advantage_std') as advantage_std
    from logged_values
    group by 1, 2
),

sampled_runs as (
    select distinct run_id from samples
),

logged as (
    select
        run_id,
        step,
        cast(
            logged_steps.batch_size * coalesce(logged_steps.num_generations, 1) as bigint
        ) as n,
        coalesce(logged_steps.mean, logged_steps.function_mean_sum) as mean,
        coalesce(logged_steps.seed_function_mean_sum, logged_steps.mean) as seed_mean,
        logged_steps.std,
        logged_steps.min,
        logged_steps.max,
        logged_steps.total,
        coalesce(logged_steps.variance, logged_steps.std * logged_steps.std) as variance,
        logged_steps.entropy,
        'logged' as basis
    from logged_steps
    anti join samples using (run_id, step)
    where
        coalesce(logged_steps.mean, logged_steps.function_mean_sum) is not null
        {#- A run with per-sample rewards takes a logged step only when it
            logged its reward functions too: a total logged by another
            reward (a trainer's own score beside a dump's V_i and S_i) is not
            the same sum. #}
        and (
            logged_steps.function_mean_sum is not null
            or logged_steps.run_id not in (select sampled_runs.run_id from sampled_runs)
        )
),

combined as (
    select * from samples
    union all
    select * from logged
),

final as (
    select
        ---------- ids
        combined.run_id,
        combined.step,

        ---------- strings
        combined.basis,
        held_out.performance_metric,

        ---------- numerics
        combined.n,
        combined.mean,
        combined.seed_mean,
        combined.std,
        combined.min,
        combined.max,
        combined.total,
        case
            when combined.std > 0 then abs(combined.mean) / combined.std
            when combined.std = 0 then 0.0
            else logged_steps.logged_signal_to_noise
        end as signal_to_noise,
        combined.entropy,
        combined.variance,
        logged_steps.kl_divergence,
        logged_steps.policy_entropy,
        logged_steps.advantage_mean,
        logged_steps.advantage_std,
        held_out.performance,

        ---------- booleans
        combined.std = 0 as is_zero_variance

    from combined
    left join logged_steps using (run_id, step)
    left join {{ ref('int_reward_held_out') }} as held_out using (run_id, step)
)

select * from final
