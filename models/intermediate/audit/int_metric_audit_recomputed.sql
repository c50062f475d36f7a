{# What obs can recompute from a step's rollouts, for each metric a trainer
   logs about them: one row per run, iteration, audited metric, reward
   function ('' when none) and convention. A metric with several accepted
   conventions (sample or population std; the total reward weighted by the
   run's reward_weights or as scored) gets one row per convention, and the
   audit keeps the one that matches. A metric obs holds but cannot compare
   (characters against a logged token length; a clip ratio without a
   configured max length) gets a row with is_comparable false. #}
with

rollouts as (
    select
        run_id,
        iteration,
        prompt_hash,
        sample_idx,
        group_id,
        score,
        rewards,
        response_chars,
        try_cast({{ json_text('extra', 'response_tokens') }} as double) as response_tokens,
        {# solved under the build's one success rule (var success), beside
           the trainer's own convention (a score of audit_solved_score) #}
        case when {{ success_condition() }} then 1 else 0 end as is_success
    from {{ ref('stg_rollouts') }}
),

run_attributes as (
    select
        run_id,
        config
    from {{ ref('int_run_attributes') }}
),

{# The run's config: reward_weights as a JSON list (in the order of the
   reward functions) or object (by function name), also when a tracker
   logged it as text; the max response length as TRL
   (max_completion_length) or verl (data.max_response_length) names it. #}
run_settings as (
    select
        run_id,
        {{ try_as_json(json_text('config', 'reward_weights')) }} as reward_weights,
        coalesce(
            try_cast({{ json_text('config', 'max_completion_length') }} as double),
            try_cast(
                {{ json_text('config', ['data', 'max_response_length']) }} as double
            ),
            try_cast({{ json_text('config', 'data.max_response_length') }} as double)
        ) as max_length
    from run_attributes
),

samples as (
    select
        rollouts.*,
        {{ row_numbers(['run_id', 'iteration', 'prompt_hash', 'sample_idx']) }} as sample_number
    from rollouts
),

known_weights as (
    select
        run_id,
        reward_function,
        weight
    from {{ ref('int_reward_weights') }}
    where found_by != 'unknown'
),

function_values as (
    select
        sample_number,
        {{ map_members('rewards', 'function_name', 'reward_value', 'function_position') }}
    from samples
    where rewards is not null
),

function_weights as (
    select
        function_values.sample_number,
        function_values.function_name,
        function_values.reward_value,
        {#- the config's reward_weights, else the weights obs judges R with
            (from the source, a fit of the logged total, or a var; not the
            plain sum it falls back to when they are unknown) #}
        coalesce(
            case {{ json_kind('run_settings.reward_weights') }}
                when 'ARRAY'
                    then try_cast(
                        {{ json_at(
                            'run_settings.reward_weights',
                            index='function_values.function_position - 1'
                        ) }} as double
                    )
                when 'OBJECT'
                    then try_cast(
                        {{ json_at(
                            'run_settings.reward_weights', name='function_values.function_name'
                        ) }} as double
                    )
            end,
            known_weights.weight
        ) as weight
    from function_values
    inner join samples on function_values.sample_number = samples.sample_number
    left join run_settings on samples.run_id = run_settings.run_id
    left join known_weights
        on
            samples.run_id = known_weights.run_id
            and function_values.function_name = known_weights.reward_function
),

weighted_totals as (
    select
        sample_number,
        case
            when count(weight) = count(*) then sum(weight * reward_value)
        end as weighted_total
    from function_weights
    group by 1
),

samples_weighted as (
    select
        samples.*,
        weighted_totals.weighted_total,
        run_settings.max_length,
        {# the trainer's group where the rollouts carry it, else the prompt #}
        coalesce(samples.group_id, samples.prompt_hash) as group_key,
        bool_or(samples.group_id is not null) over (
            partition by samples.run_id, samples.iteration
        ) as has_group_id
    from samples
    left join weighted_totals on samples.sample_number = weighted_totals.sample_number
    left join run_settings on samples.run_id = run_settings.run_id
),

step_stats as (
    select
        run_id,
        iteration,
        count(*) as samples,
        avg(score) as score_mean,
        stddev_samp(score) as score_std_sample,
        stddev_pop(score) as score_std_population,
        case when count(weighted_total) = count(*) then avg(weighted_total) end as weighted_mean,
        case
            when count(weighted_total) = count(*) then stddev_samp(weighted_total)
        end as weighted_std_sample,
        case
            when count(weighted_total) = count(*) then stddev_pop(weighted_total)
        end as weighted_std_population,
        avg(response_chars) as response_chars_mean,
        case
            when count(response_tokens) = count(*) then avg(response_tokens)
        end as response_tokens_mean,
        any_value(max_length) as max_length,
        bool_or(has_group_id) as has_group_id
    from samples_weighted
    group by 1, 2
),

clipped as (
    select
        run_id,
        iteration,
        case
            when count(response_tokens) = count(*) and any_value(max_length) is not null
                then avg(case when response_tokens >= max_length then 1 else 0 end)
        end as clip_ratio
    from samples_weighted
    group by 1, 2
),

groups as (
    select
        run_id,
        iteration,
        group_key,
        count(*) as group_samples,
        coalesce(stddev_pop(score), 0) as group_std,
        case
            when count(weighted_total) = count(*) then coalesce(stddev_pop(weighted_total), 0)
        end as group_std_weighted,
        min(score) as min_score,
        max(score) as max_score,
        min(is_success) as min_success,
        max(is_success) as max_success
    from samples_weighted
    group by 1, 2, 3
),

group_stats as (
    select
        run_id,
        iteration,
        avg(case when group_std <= {{ var('audit_zero_std', 1e-8) }} then 1 else 0 end)
            as zero_std_frac,
        case
            when count(group_std_weighted) = count(*)
                then avg(
                    case
                        when group_std_weighted <= {{ var('audit_zero_std', 1e-8) }} then 1
                        else 0
                    end
                )
        end as zero_std_frac_weighted,
        avg(case when min_score >= {{ var('audit_solved_score', 1.0) }} then 1 else 0 end)
            as solve_all,
        avg(case when max_score < {{ var('audit_solved_score', 1.0) }} then 1 else 0 end)
            as solve_none,
        avg(min_success) as solve_all_by_rule,
        avg(1 - max_success) as solve_none_by_rule
    from groups
    group by 1, 2
),

function_means as (
    select
        samples.run_id,
        samples.iteration,
        function_values.function_name,
        avg(function_values.reward_value) as reward_function_mean
    from function_values
    inner join samples on function_values.sample_number = samples.sample_number
    group by 1, 2, 3
),

candidates as (
    {% set rows = [
        ('reward_mean', 'score', 'score_mean', 1),
        ('reward_mean', 'weighted by reward_weights', 'weighted_mean', 2),
        ('reward_std', 'sample std (ddof 1)', 'score_std_sample', 1),
        ('reward_std', 'population std (ddof 0)', 'score_std_population', 2),
        ('reward_std', 'weighted, sample std (ddof 1)', 'weighted_std_sample', 3),
        ('reward_std', 'weighted, population std (ddof 0)', 'weighted_std_population', 4),
        ('response_length', 'mean tokens', 'response_tokens_mean', 1),
    ] %}
    {% for metric, convention, column, preference in rows %}
        select
            run_id,
            iteration,
            '{{ metric }}' as audit_metric,
            '' as function_name,
            '{{ convention }}' as convention,
            {{ column }} as recomputed_value,
            {{ preference }} as preference,
            true as is_comparable
        from step_stats
        where {{ column }} is not null
        union all
    {% endfor %}
    {# characters are not tokens: shown, never compared #}
    select
        run_id,
        iteration,
        'response_length' as audit_metric,
        '' as function_name,
        'mean characters (not tokens)' as convention,
        response_chars_mean as recomputed_value,
        9 as preference,
        false as is_comparable
    from step_stats
    where response_tokens_mean is null
    union all
    select
        step_stats.run_id,
        step_stats.iteration,
        'clip_ratio' as audit_metric,
        '' as function_name,
        case
            when clipped.clip_ratio is not null then 'tokens >= configured max length'
            when step_stats.max_length is null then 'no max length in the run config'
            else 'no token counts in the rollouts'
        end as convention,
        clipped.clip_ratio as recomputed_value,
        1 as preference,
        clipped.clip_ratio is not null as is_comparable
    from step_stats
    inner join clipped
        on step_stats.run_id = clipped.run_id and step_stats.iteration = clipped.iteration
    union all
    select
        step_stats.run_id,
        step_stats.iteration,
        'zero_std_frac' as audit_metric,
        '' as function_name,
        case
            when step_stats.has_group_id then 'groups by group_id'
            else 'groups by prompt'
        end as convention,
        group_stats.zero_std_frac as recomputed_value,
        1 as preference,
        true as is_comparable
    from step_stats
    inner join group_stats
        on step_stats.run_id = group_stats.run_id and step_stats.iteration = group_stats.iteration
    union all
    select
        step_stats.run_id,
        step_stats.iteration,
        'zero_std_frac' as audit_metric,
        '' as function_name,
        case
            when step_stats.has_group_id then 'groups by group_id, weighted by reward_weights'
            else 'groups by prompt, weighted by reward_weights'
        end as convention,
        group_stats.zero_std_frac_weighted as recomputed_value,
        2 as preference,
        true as is_comparable
    from step_stats
    inner join group_stats
        on step_stats.run_id = group_stats.run_id and step_stats.iteration = group_stats.iteration
    where group_stats.zero_std_frac_weighted is not null
    union all
    {% for metric, expression in [
        ('solve_all', 'solve_all'),
        ('solve_none', 'solve_none'),
        ('solve_some', '1 - solve_all - solve_none'),
    ] %}
        select
            run_id,
            iteration,
            '{{ metric }}' as audit_metric,
            '' as function_name,
            'groups, solved at score >= {{ var("audit_solved_score", 1.0) }}' as convention,
            {{ expression }} as recomputed_value,
            1 as preference,
            true as is_comparable
        from group_stats
        union all
    {% endfor %}
    {# the same shares with solved as var success counts it (a trainer that
       logs them by the user's rule agrees under it); auto is strict #}
    {%- set rule = success_rule() -%}
    {%- set rule_text = 'strict' if rule.kind == 'auto' else rule.text %}
    {% for metric, expression in [
        ('solve_all', 'solve_all_by_rule'),
        ('solve_none', 'solve_none_by_rule'),
        ('solve_some', '1 - solve_all_by_rule - solve_none_by_rule'),
    ] %}
        select
            run_id,
            iteration,
            '{{ metric }}' as audit_metric,
            '' as function_name,
            'groups, solved as var success counts it ({{ rule_text }})'
                as convention,
            {{ expression }} as recomputed_value,
            2 as preference,
            true as is_comparable
        from group_stats
        union all
    {% endfor %}
    select
        run_id,
        iteration,
        'reward_function_mean' as audit_metric,
        function_name,
        'mean' as convention,
        reward_function_mean as recomputed_value,
        1 as preference,
        true as is_comparable
    from function_means
)

select * from candidates
