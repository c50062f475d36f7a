{# One row per run and reward function: the GRPO reward monitor's quality
   parts for the function alone, over every step of its run, each in [0, 1]:
   - consistency = 1 / (1 + CV of the function's step means), CV = their
     population std / |their mean| (1 when the run has fewer than 2 steps or
     the mean is 0);
   - discriminability = min(1, pooled CV / 2), pooled CV = std / |mean| over
     every sample (1 when the mean is 0 and the std is not; 0 when neither
     varies);
   - stability = 1 / (1 + std / mean of the step variances), over steps with
     at least 2 samples (1 when the run has fewer than 3 steps, or the
     variances are fewer than 2 or all 0);
   - coverage = min(1, IQR / range) over every sample (0 when the function
     has one sample or no range; null on basis 'logged': it needs samples);
   quality_score = 100 x (0.25 consistency + 0.35 discriminability + 0.25
   stability + 0.15 coverage), null when coverage is (logged). Issues,
   warnings and recommendations come from the reward_quality_rules seed. #}
with

runs as (
    select * from {{ ref('int_reward_function_runs') }}
),

parts as (
    select
        run_id,
        reward_function,
        basis,
        run_steps,
        steps,
        n,
        step_mean_cv,
        pooled_cv,
        function_stability,
        coverage as function_coverage
    from runs
),

scored as (
    select
        *,
        1.0 / (1.0 + coalesce(step_mean_cv, 0.0)) as consistency,
        least(1.0, coalesce(pooled_cv / 2.0, 0.0)) as discriminability,
        coalesce(function_stability, 1.0) as stability,
        case when basis = 'samples' then coalesce(function_coverage, 0.0) end as coverage
    from parts
),

component_values as (
    {%- for component in ['consistency', 'discriminability', 'stability', 'coverage'] %}
        select
            run_id,
            reward_function,
            '{{ component }}' as component,
            {{ component }} as value
        from scored
        {{- "\n    union all" if not loop.last }}
    {%- endfor %}
),

said as (
    {{ rule_texts('component_values', ['run_id', 'reward_function']) }}
),

lists as (
    {{ text_lists('said', ['run_id', 'reward_function']) }}
),

final as (
    select
        ---------- ids
        scored.run_id,
        scored.reward_function,

        ---------- strings
        scored.basis,
        coalesce(lists.issues, {{ empty_list('varchar') }}) as issues,
        coalesce(lists.warnings, {{ empty_list('varchar') }}) as warnings,
        coalesce(lists.recommendations, {{ empty_list('varchar') }}) as recommendations,

        ---------- numerics
        scored.steps,
        scored.n,
        scored.step_mean_cv,
        scored.pooled_cv,
        scored.consistency,
        scored.discriminability,
        scored.stability,
        scored.coverage,
        {{ reward_quality_score('scored') }} as quality_score

    from scored
    left join lists using (run_id, reward_function)
)

select * from final
