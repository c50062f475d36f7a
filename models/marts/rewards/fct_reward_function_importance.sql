{# One row per run and reward function: how much the function drives the
   reward, over every step of the run (the GRPO reward monitor's function
   importance, plus correlations obs adds).
   weight: the function's (int_reward_weights); contribution = 100 x the
   function's weighted sum / the sum of the per-sample rewards R_i (null
   when that total is <= 0, or for a logged-only function, weight 0);
   seed_contribution the reward monitor's own, of the plain sums; mean and std pooled over every sample;
   variability = std / |mean| (0 when the mean is 0); impact_score =
   100 x (contribution / 100) x variability, which is contribution x
   variability (the reward monitor's formula); correlation_with_total = Pearson
   correlation of the function's per-sample rewards with R_i over the
   samples it scored (samples only; int_reward_sample_total_steps); correlation_with_performance = correlation of the
   function's step means with the performance metric at the steps both were
   logged (at least 3). rank: 1 = the largest impact_score. #}
with

runs as (
    select * from {{ ref('int_reward_function_runs') }}
),

{# The co-moments of each function with R_i, pooled over the run's steps
   exactly (a step's, plus n x the product of its means' distances from
   the run's): linear in the run's functions, so every function of any run
   gets its correlation with the total (no pairs of functions). #}
total_steps as (
    select
        run_id,
        step,
        reward_function,
        n,
        mean_reward,
        mean_total,
        comoment,
        reward_comoment,
        total_comoment
    from {{ ref('int_reward_sample_total_steps') }}
),

total_means as (
    select
        run_id,
        reward_function,
        sum(n * mean_reward) / sum(n) as mean_reward,
        sum(n * mean_total) / sum(n) as mean_total
    from total_steps
    group by 1, 2
),

with_total as (
    select
        total_steps.run_id,
        total_steps.reward_function,
        sum(
            total_steps.comoment
            + total_steps.n * (total_steps.mean_reward - total_means.mean_reward)
            * (total_steps.mean_total - total_means.mean_total)
        ) as comoment_with_total,
        sum(
            total_steps.reward_comoment
            + total_steps.n * power(total_steps.mean_reward - total_means.mean_reward, 2)
        ) as own_comoment,
        sum(
            total_steps.total_comoment
            + total_steps.n * power(total_steps.mean_total - total_means.mean_total, 2)
        ) as total_comoment
    from total_steps
    inner join total_means using (run_id, reward_function)
    group by 1, 2
),

performance as (
    select
        steps.run_id,
        functions.reward_function,
        case
            when count(*) >= 3 and var_pop(functions.mean) > 0 and var_pop(steps.performance) > 0
                then corr(functions.mean, steps.performance)
        end as correlation_with_performance
    from {{ ref('fct_reward_function_steps') }} as functions
    inner join {{ ref('fct_reward_steps') }} as steps using (run_id, step)
    where steps.performance is not null and {{ is_finite('steps.performance') }}
    group by 1, 2
),

measured as (
    select
        runs.run_id,
        runs.reward_function,
        runs.basis,
        runs.steps,
        runs.n,
        coalesce(runs.weight, 1.0) as weight,
        case
            when coalesce(runs.weight, 1.0) != 0 and runs.run_total > 0
                then 100.0 * coalesce(runs.weight, 1.0) * runs.function_total / runs.run_total
        end as contribution,
        case
            when coalesce(runs.seed_run_total, runs.run_total) > 0
                then 100.0 * runs.function_total / coalesce(runs.seed_run_total, runs.run_total)
        end as seed_contribution,
        runs.mean,
        runs.std,
        case
            when runs.mean != 0
                then runs.std / abs(runs.mean)
            else 0.0
        end as variability,
        case
            when
                runs.basis = 'samples'
                and with_total.own_comoment > 0
                and with_total.total_comoment > 0
                then
                    with_total.comoment_with_total
                    / sqrt(with_total.own_comoment * with_total.total_comoment)
        end as correlation_with_total,
        performance.correlation_with_performance
    from runs
    left join with_total using (run_id, reward_function)
    left join performance using (run_id, reward_function)
),

final as (
    select
        ---------- ids
        run_id,
        reward_function,

        ---------- strings
        basis,

        ---------- numerics
        steps,
        n,
        weight,
        contribution,
        seed_contribution,
        mean,
        std,
        variability,
        contribution * variability as impact_score,
        correlation_with_total,
        correlation_with_performance,
        weight = 0 as is_logged_only,
        row_number() over (
            partition by run_id
            {#- exact: equal impact scores tie, and the name breaks the tie #}
            order by
                {{ exact_float('contribution * variability') }} desc nulls last,
                reward_function
        ) as rank
    from measured
)

select * from final
