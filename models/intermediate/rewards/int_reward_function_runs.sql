{# Each reward function over its whole run, from int_reward_function_steps:
   what the quality score and the importance are made of. A run with
   per-sample rewards at any step is judged on those steps (basis
   'samples'); a run with none on what was logged (basis 'logged', each step
   weighing one, as if every step had the same batch).
   - pooled mean and population std over every sample of every step (law of
     total variance: the steps' variances plus the spread of their means);
   - the function's sum, its weight (int_reward_weights), the sum of the
     per-sample rewards R_i (run_total, weighted) and of the plain sums
     (seed_run_total);
   - the spread of the step means (consistency) and of the step variances
     over steps with at least two samples (stability);
   - coverage from int_reward_function_coverage (samples only);
   - the quality terms fct_reward_function_quality and fct_reward_quality
     both read: step_mean_cv (population std / |mean| of the step means;
     null with fewer than 2 steps or a zero mean), pooled_cv (std / |mean|
     over every sample; 1 when the mean is 0 and it varies) and
     function_stability (1 / (1 + std / mean of the step variances); null
     with fewer than 3 steps, fewer than 2 variances, or all 0). #}
with

steps as (
    select * from {{ ref('int_reward_function_steps') }}
),

run_basis as (
    select
        run_id,
        case when bool_or(basis = 'samples') then 'samples' else 'logged' end as basis,
        count(distinct step) filter (where basis = 'samples') as sample_steps,
        count(distinct step) as all_steps
    from steps
    group by 1
),

judged as (
    select
        steps.*,
        coalesce(steps.n, 1) as sample_weight,
        run_basis.sample_steps,
        run_basis.all_steps
    from steps
    inner join run_basis
        on
            steps.run_id = run_basis.run_id
            and steps.basis = run_basis.basis
),

run_steps as (
    select
        run_id,
        count(distinct step) as steps,
        sum(weight * coalesce(total, mean)) as run_total,
        sum(coalesce(total, mean)) as seed_run_total
    from judged
    group by 1
),

pooled_mean as (
    select
        *,
        sum(sample_weight * mean) over function_window / sum(sample_weight) over function_window
            as pooled_mean
    from judged
    window function_window as (partition by run_id, reward_function)
),

final as (
    select
        ---------- ids
        pooled_mean.run_id,
        pooled_mean.reward_function,

        ---------- strings
        any_value(pooled_mean.basis) as basis,

        ---------- numerics
        any_value(run_steps.steps) as run_steps,
        count(*) as steps,
        cast(sum(pooled_mean.n) as bigint) as n,
        any_value(pooled_mean.pooled_mean) as mean,
        sqrt(
            sum(
                pooled_mean.sample_weight * (
                    coalesce(pooled_mean.variance, 0)
                    + power(pooled_mean.mean - pooled_mean.pooled_mean, 2)
                )
            ) / sum(pooled_mean.sample_weight)
        ) as std,
        sum(coalesce(pooled_mean.total, pooled_mean.mean))
            as function_total,
        any_value(run_steps.run_total) as run_total,
        any_value(run_steps.seed_run_total) as seed_run_total,
        any_value(pooled_mean.weight) as weight,
        avg(pooled_mean.mean) as step_mean_mean,
        stddev_pop(pooled_mean.mean) as step_mean_std,
        count(pooled_mean.variance) filter (
            where pooled_mean.basis = 'logged' or pooled_mean.n >= 2
        ) as variance_steps,
        avg(pooled_mean.variance) filter (
            where pooled_mean.basis = 'logged' or pooled_mean.n >= 2
        ) as step_variance_mean,
        stddev_pop(pooled_mean.variance) filter (
            where pooled_mean.basis = 'logged' or pooled_mean.n >= 2
        ) as step_variance_std,
        any_value(coverage.coverage) as coverage
    from pooled_mean
    inner join run_steps on pooled_mean.run_id = run_steps.run_id
    left join {{ ref('int_reward_function_coverage') }} as coverage
        on
            pooled_mean.run_id = coverage.run_id
            and pooled_mean.reward_function = coverage.reward_function
            and pooled_mean.basis = 'samples'
    group by 1, 2
),

terms as (
    select
        *,
        case
            when run_steps >= 2 and step_mean_mean != 0
                then step_mean_std / abs(step_mean_mean)
        end as step_mean_cv,
        case
            when mean != 0 then std / abs(mean)
            when std > 0 then 1.0
        end as pooled_cv,
        case
            when run_steps >= 3 and variance_steps >= 2 and step_variance_mean > 0
                then 1.0 / (1.0 + step_variance_std / step_variance_mean)
        end as function_stability
    from final
)

select * from terms
