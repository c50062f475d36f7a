{# One row per run and pair of reward functions (function_a < function_b):
   the Pearson correlation of their per-sample rewards over every sample of
   the run (pooled from each step's co-moments, exactly), null when either
   function never varies or the run has no per-sample rewards; and the
   correlation of their step means (every basis). A pair whose |correlation|
   is above the reward_quality_rules correlation threshold (0.9) is
   redundant: the two functions say the same thing. Only a run's paired
   functions (int_reward_pair_functions: at most reward_pair_max_functions,
   by largest |weight|, then variance, then name; none past
   reward_pair_function_limit) form pairs, so the mart grows with the
   square of that cap, not of the run's functions; fct_reward_pair_selection
   says which runs were cut. #}
with

comoments as (
    select * from {{ ref('int_reward_pair_runs') }}
),

sample_correlations as (
    select
        cross_pair.run_id,
        cross_pair.function_a,
        cross_pair.function_b,
        cross_pair.n,
        case
            when own_a.comoment > 0 and own_b.comoment > 0
                then cross_pair.comoment / sqrt(own_a.comoment * own_b.comoment)
        end as correlation
    from comoments as cross_pair
    inner join comoments as own_a
        on
            cross_pair.run_id = own_a.run_id
            and cross_pair.function_a = own_a.function_a
            and own_a.function_a = own_a.function_b
    inner join comoments as own_b
        on
            cross_pair.run_id = own_b.run_id
            and cross_pair.function_b = own_b.function_a
            and own_b.function_a = own_b.function_b
    where cross_pair.function_a < cross_pair.function_b
),

paired_functions as (
    select
        run_id,
        reward_function
    from {{ ref('int_reward_pair_functions') }}
    where is_paired
),

function_steps as (
    select
        steps.run_id,
        steps.step,
        steps.reward_function,
        steps.mean,
        steps.basis
    from {{ ref('fct_reward_function_steps') }} as steps
    inner join paired_functions
        on
            steps.run_id = paired_functions.run_id
            and steps.reward_function = paired_functions.reward_function
),

step_correlations as (
    select
        a.run_id,
        a.reward_function as function_a,
        b.reward_function as function_b,
        count(*) as steps,
        case
            when var_pop(a.mean) > 0 and var_pop(b.mean) > 0
                then corr(a.mean, b.mean)
        end as step_mean_correlation,
        case when bool_or(a.basis = 'samples') then 'samples' else 'logged' end as basis
    from function_steps as a
    inner join function_steps as b
        on
            a.run_id = b.run_id
            and a.step = b.step
            and a.reward_function < b.reward_function
    group by 1, 2, 3
),

threshold as (
    select
        rule_order,
        lower,
        coalesce(lower_inclusive, false) as lower_inclusive
    from {{ ref('reward_quality_rules') }}
    where component = 'correlation'
    order by 1
    limit 1
),

final as (
    select
        ---------- ids
        step_correlations.run_id,
        step_correlations.function_a,
        step_correlations.function_b,

        ---------- strings
        step_correlations.basis,

        ---------- numerics
        sample_correlations.n,
        step_correlations.steps,
        sample_correlations.correlation,
        step_correlations.step_mean_correlation,

        ---------- booleans
        coalesce(
            case
                when threshold.lower_inclusive
                    then abs(sample_correlations.correlation) >= threshold.lower
                else abs(sample_correlations.correlation) > threshold.lower
            end,
            false
        ) as is_redundant

    from step_correlations
    left join sample_correlations using (run_id, function_a, function_b)
    left join threshold on true
)

select * from final
