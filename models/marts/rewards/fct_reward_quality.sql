{# One row per run with reward data: the GRPO reward monitor's quality
   report over every step of the run. Each part in [0, 1], from the
   functions' parts (fct_reward_function_quality has each function's):
   - consistency = 1 / (1 + the mean over functions of the CV of the
     function's step means; functions whose step means average 0 are
     skipped); 1 with fewer than 2 steps or no CV;
   - discriminability = min(1, the mean over functions of pooled CV / 2); 0
     when no function has one;
   - stability = the mean over functions of 1 / (1 + std / mean of the step
     variances); 1 with fewer than 3 steps or when no function has one;
   - coverage = the mean over functions of min(1, IQR / range) of the
     pooled samples; 0 when no function has one; null on basis 'logged'
     (it needs per-sample rewards);
   quality_score = 100 x (0.25 consistency + 0.35 discriminability + 0.25
   stability + 0.15 coverage), null when coverage is. issues, warnings and
   recommendations follow the reward_quality_rules seed, in its order, then
   one warning per redundant pair of optimised functions. The functions judged are
   those the trainer optimised: a logged-only function (weight 0,
   int_reward_weights) is left out. #}
with

functions as (
    select
        run_id,
        reward_function,
        basis,
        run_steps,
        coverage,
        step_mean_cv,
        pooled_cv,
        function_stability
    from {{ ref('int_reward_function_runs') }}
    {#- a logged-only function (weight 0) is no part of the reward judged #}
    where coalesce(weight, 1.0) != 0
),

runs as (
    select
        run_id,
        any_value(basis) as basis,
        any_value(run_steps) as steps,
        count(*) as reward_functions,
        1.0 / (1.0 + coalesce(avg(step_mean_cv), 0.0))
            as consistency,
        least(1.0, coalesce(avg(pooled_cv) / 2.0, 0.0))
            as discriminability,
        case
            when any_value(run_steps) >= 3
                then coalesce(avg(function_stability), 1.0)
            else 1.0
        end as stability,
        case
            when any_value(basis) = 'samples'
                then coalesce(avg(coverage), 0.0)
        end as coverage
    from functions
    group by 1
),

component_values as (
    {%- for component in ['consistency', 'discriminability', 'stability', 'coverage'] %}
        select
            run_id,
            '{{ component }}' as component,
            {{ component }} as value
        from runs
        {{- "\n    union all" if not loop.last }}
    {%- endfor %}
),

said_on_parts as (
    {{ rule_texts('component_values', ['run_id']) }}
),

said_on_pairs as (
    select
        pairs.run_id,
        rules.rule_order,
        pairs.function_a,
        pairs.function_b,
        rules.list_name,
        replace(
            replace(
                replace(rules.text, '{r:.2f}', {{ format_fixed('pairs.correlation', 2) }}),
                '{f1}', pairs.function_a
            ),
            '{f2}', pairs.function_b
        ) as text,
        rules.recommendation
    from {{ ref('fct_reward_correlations') }} as pairs
    inner join {{ ref('reward_quality_rules') }} as rules
        on
            {{ reward_rule_holds('rules', 'abs(pairs.correlation)') }}
            and rules.component = 'correlation'
    {#- both functions optimised: a logged-only check moving with a trained
        function is a held-out check agreeing, not a redundant reward #}
    inner join functions as judged_a
        on pairs.run_id = judged_a.run_id and pairs.function_a = judged_a.reward_function
    inner join functions as judged_b
        on pairs.run_id = judged_b.run_id and pairs.function_b = judged_b.reward_function
),

said as (
    select * from said_on_parts
    union all
    select * from said_on_pairs
),

lists as (
    {{ text_lists('said', ['run_id']) }}
),

final as (
    select
        ---------- ids
        runs.run_id,

        ---------- strings
        runs.basis,
        coalesce(lists.issues, {{ empty_list('varchar') }}) as issues,
        coalesce(lists.warnings, {{ empty_list('varchar') }}) as warnings,
        coalesce(lists.recommendations, {{ empty_list('varchar') }}) as recommendations,

        ---------- numerics
        runs.steps,
        runs.reward_functions,
        runs.consistency,
        runs.discriminability,
        runs.stability,
        runs.coverage,
        {{ reward_quality_score('runs') }} as quality_score

    from runs
    left join lists using (run_id)
)

select * from final
