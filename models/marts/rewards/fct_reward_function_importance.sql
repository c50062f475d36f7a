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
   correlation of the function's per-sample rewards with R_i (samples
   only); correlation_with_performance = correlation of the
   function's step means with the performance metric at the steps both were
   logged (at least 3). rank: 1 = the largest impact_score. #}
with

runs as (
    select * from {{ ref('int_reward_function_runs') }}
),

weights as (
    select
        run_id,
        reward_function,
        weight
    from {{ ref('int_reward_weights') }}
),

comoments as (
    select
        pairs.*,
        coalesce(weight_a.weight, 1.0) as weight_a,
        coalesce(weight_b.weight, 1.0) as weight_b
    from {{ ref('int_reward_pair_runs') }} as pairs
    left join weights as weight_a
        on pairs.run_id = weight_a.run_id and pairs.function_a = weight_a.reward_function
    left join weights as weight_b
        on pairs.run_id = weight_b.run_id and pairs.function_b = weight_b.reward_function
),

{# cov(f, R) = sum over g of w_g cov(f, g); var(R) = the sum over every
   pair of w_f w_g cov(f, g), counting the pairs of two functions twice. #}
with_total as (
    select
        run_id,
        function_a as reward_function,
        weight_b * comoment as comoment
    from comoments
    union all
    select
        run_id,
        function_b,
        weight_a * comoment as comoment
    from comoments
    where function_a != function_b
),

total_comoments as (
    select
        run_id,
        reward_function,
        sum(comoment) as comoment_with_total
    from with_total
    group by 1, 2
),

total_variance as (
    select
        run_id,
        sum(
            case
                when function_a = function_b then weight_a * weight_b * comoment
                else 2 * weight_a * weight_b * comoment
            end
        ) as total_comoment
    from comoments
    group by 1
),

own as (
    select
        run_id,
        function_a as reward_function,
        comoment as own_comoment
    from comoments
    where function_a = function_b
),

performance as (
    select
        steps.run_id,
        functions.reward_function,
        case
            when count(*) >= 3 and var_pop(functions.mean) > 0 and var_pop(steps.performance) > 0
                then {{ exact_float('corr(functions.mean, steps.performance)') }}
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
                then {{ exact_float(
                    '100.0 * coalesce(runs.weight, 1.0) * runs.function_total / runs.run_total'
                ) }}
        end as contribution,
        case
            when coalesce(runs.seed_run_total, runs.run_total) > 0
                then {{ exact_float(
                    '100.0 * runs.function_total / coalesce(runs.seed_run_total, runs.run_total)'
                ) }}
        end as seed_contribution,
        runs.mean,
        runs.std,
        case
            when runs.mean != 0
                then {{ exact_float('runs.std / abs(runs.mean)') }}
            else 0.0
        end as variability,
        case
            when
                runs.basis = 'samples'
                and own.own_comoment > 0
                and total_variance.total_comoment > 0
                then {{ exact_float(
                    'total_comoments.comoment_with_total
                    / sqrt(own.own_comoment * total_variance.total_comoment)'
                ) }}
        end as correlation_with_total,
        performance.correlation_with_performance
    from runs
    left join own using (run_id, reward_function)
    left join total_comoments using (run_id, reward_function)
    left join total_variance using (run_id)
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
        {{ exact_float('contribution * variability') }} as impact_score,
        correlation_with_total,
        correlation_with_performance,
        weight = 0 as is_logged_only,
        row_number() over (
            partition by run_id
            order by contribution * variability desc nulls last, reward_function
        ) as rank
    from measured
)

select * from final
