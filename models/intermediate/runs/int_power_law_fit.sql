{# The rows of fct_power_law_fit (a view of this table).
   Does reward scale as a power of compute (reward = a * compute^b)? An
   ordinary least-squares line of ln(reward) on ln(cumulative compute), per
   run and per base model across the runs tagged `power-laws` (comparing
   exponents across model sizes is the point of the sweep). Logarithms need
   positive values: the other points are counted as excluded, and fewer than
   3 usable points give no fit. The compute for a target reward inverts the
   fit: (target / a)^(1/b), defined when b > 0. #}
{%- set target = var('power_law_target_reward', none) %}
with

steps as (
    select * from {{ ref('int_run_steps') }}
),

runs as (
    select * from {{ ref('int_run_attributes') }}
),

points as (
    {# reward_at_compute is the trainer's own reward for the compute axis;
       reward_mean stands in when it is not logged. #}
    select
        run_id,
        step,
        cumulative_compute as compute,
        coalesce(reward_at_compute, reward_mean) as reward
    from steps
    where
        {{ is_finite('cumulative_compute') }}
        and {{ is_finite('coalesce(reward_at_compute, reward_mean)') }}
),

fit_runs as (
    select
        runs.run_id,
        {{ json_text('runs.config', 'base_model_id') }} as base_model_id,
        {{ list_contains('runs.tags', "'power-laws'") }} as is_power_law_sweep
    from runs
),

scoped as (
    {# Every point once per fit it belongs to: its run's, and its base model's
       when the run is tagged power-laws. #}
    select
        'run' as scope,
        points.run_id as fit_id,
        points.run_id,
        points.run_id as point_run_id,
        fit_runs.base_model_id,
        points.step,
        points.compute,
        points.reward
    from points
    left join fit_runs using (run_id)
    union all
    select
        'base_model' as scope,
        fit_runs.base_model_id as fit_id,
        null as run_id,
        points.run_id as point_run_id,
        fit_runs.base_model_id,
        points.step,
        points.compute,
        points.reward
    from points
    inner join fit_runs using (run_id)
    where fit_runs.is_power_law_sweep and fit_runs.base_model_id is not null
),

counted as (
    select
        scope,
        fit_id,
        any_value(run_id) as run_id,
        any_value(base_model_id) as base_model_id,
        count(distinct point_run_id) as runs,
        count(*) filter (where compute > 0 and reward > 0) as n_used,
        count(*) filter (where not (compute > 0 and reward > 0)) as n_excluded,
        max(reward) as max_reward
    from scoped
    group by 1, 2
),

logs as (
    select
        scope,
        fit_id,
        step,
        compute,
        ln(compute) as x,
        ln(reward) as y
    from scoped
    where compute > 0 and reward > 0
),

ols as (
    select
        scope,
        fit_id,
        {{ regression_slope('y', 'x') }} as exponent,
        avg(y) as mean_y,
        avg(x) as mean_x,
        case
            when var_pop(x) > 0 and var_pop(y) > 0
                then power(corr(y, x), 2)
        end as r_squared,
        min(step) as first_step,
        max(step) as last_step,
        min(compute) as min_compute,
        max(compute) as max_compute
    from logs
    group by 1, 2
),

fitted as (
    select
        counted.scope,
        counted.fit_id,
        counted.run_id,
        counted.base_model_id,
        counted.runs,
        case when counted.n_used >= 3 then ols.exponent end as exponent,
        case
            when counted.n_used >= 3 and ols.exponent is not null
                then exp(ols.mean_y - ols.exponent * ols.mean_x)
        end as prefactor,
        case when counted.n_used >= 3 and ols.exponent is not null then ols.r_squared end
            as r_squared,
        counted.n_used,
        counted.n_excluded,
        ols.first_step,
        ols.last_step,
        ols.min_compute,
        ols.max_compute,
        counted.max_reward,
        {% if target is none -%}
            counted.max_reward
        {%- else -%}
            cast({{ target }} as double)
        {%- endif %} as target_reward
    from counted
    left join ols using (scope, fit_id)
),

final as (
    select
        scope,
        fit_id,
        run_id,
        base_model_id,
        runs,
        exponent,
        prefactor,
        r_squared,
        n_used,
        n_excluded,
        first_step,
        last_step,
        min_compute,
        max_compute,
        max_reward,
        target_reward,
        case
            when exponent > 0 and target_reward > 0
                then exp((ln(target_reward) - ln(prefactor)) / exponent)
        end as compute_for_target
    from fitted
)

select * from final
