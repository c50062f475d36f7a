{# The rows of fct_reward_function_steps (a view of this table).
   One row per run, step and reward function: the function's statistics at
   the step. From the per-sample rewards where the step has them (basis
   'samples'), else from what the trainer logged (basis 'logged': the mean,
   the std as logged, the logged contribution; a statistic that needs the
   samples is null). signal_to_noise = |mean| / std, 0 when std = 0 (the
   reward monitor's value; is_zero_variance tells the two apart);
   weight is the function's (int_reward_weights); contribution_pct = 100 x
   the function's weighted sum / the sum of the per-sample rewards R_i,
   null when that total is <= 0 or the function is logged only (weight 0;
   logged: the logged contribution, else the same from the means);
   seed_contribution_pct the reward monitor's own, of the plain sum;
   abs_share = |w mean| / the sum over the step's functions of |w mean|
   (null for a logged-only function). #}
with

samples as (
    select
        run_id,
        step,
        reward_function,
        n,
        mean,
        std,
        min,
        max,
        total,
        variance,
        cast(null as double) as logged_contribution,
        'samples' as basis
    from {{ ref('int_reward_sample_function_steps') }}
),

logged_values as (
    select
        run_id,
        step,
        reward_function,
        max(value) filter (where measure = 'mean') as mean,
        max(value) filter (where measure = 'std') as std,
        max(value) filter (where measure = 'contribution') as logged_contribution
    from {{ ref('int_reward_logged') }}
    where reward_function is not null
    group by 1, 2, 3
),

sampled as (
    select distinct
        run_id,
        step
    from samples
),

logged as (
    select
        logged_values.run_id,
        logged_values.step,
        logged_values.reward_function,
        cast(null as bigint) as n,
        logged_values.mean,
        logged_values.std,
        cast(null as double) as min,
        cast(null as double) as max,
        cast(null as double) as total,
        logged_values.std * logged_values.std as variance,
        logged_values.logged_contribution,
        'logged' as basis
    from logged_values
    anti join sampled using (run_id, step)
    where logged_values.mean is not null
),

combined as (
    select * from samples
    union all
    select * from logged
),

weights as (
    select
        run_id,
        reward_function,
        weight
    from {{ ref('int_reward_weights') }}
),

weighted as (
    select
        combined.*,
        coalesce(weights.weight, 1.0) as weight
    from combined
    left join weights
        on
            combined.run_id = weights.run_id
            and combined.reward_function = weights.reward_function
),

step_sums as (
    select
        *,
        sum(weight * total) over step_window as step_total,
        sum(weight * mean) over step_window as step_mean_sum,
        sum(abs(weight * mean)) over step_window as step_abs_mean_sum,
        sum(total) over step_window as seed_step_total,
        sum(mean) over step_window as seed_step_mean_sum
    from weighted
    window step_window as (partition by run_id, step)
),

final as (
    select
        ---------- ids
        run_id,
        step,
        reward_function,

        ---------- strings
        basis,

        ---------- numerics
        n,
        mean,
        std,
        min,
        max,
        total,
        variance,
        weight,
        case when std > 0 then abs(mean) / std when std = 0 then 0.0 end as signal_to_noise,
        case
            when weight = 0 then null
            when basis = 'samples' and step_total > 0 then 100.0 * weight * total / step_total
            when basis = 'logged'
                then coalesce(
                    logged_contribution,
                    case when step_mean_sum > 0 then 100.0 * weight * mean / step_mean_sum end
                )
        end as contribution_pct,
        case
            when basis = 'samples' and seed_step_total > 0 then 100.0 * total / seed_step_total
            when basis = 'logged'
                then coalesce(
                    logged_contribution,
                    case when seed_step_mean_sum > 0 then 100.0 * mean / seed_step_mean_sum end
                )
        end as seed_contribution_pct,
        case
            when weight != 0 then abs(weight * mean) / nullif(step_abs_mean_sum, 0)
        end as abs_share,

        ---------- booleans
        std = 0 as is_zero_variance,
        weight = 0 as is_logged_only

    from step_sums
)

select * from final
