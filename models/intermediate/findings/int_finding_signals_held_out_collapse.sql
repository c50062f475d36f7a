{# The rules held_out_collapse and reward_held_out_divergence: the held-out
   metric (int_reward_held_out: eval_accuracy, or what the var
   performance_metric names) against the training reward. The training
   reward is, one series per run, the first that applies:
   - R, the reward the trainer optimised (int_reward_steps' mean: sum_f w_f
     r_f with the weights of int_reward_weights), where the run's reward
     functions are known;
   - the tracker's reward_mean (int_reward_steps' logged mean) where they
     are not;
   - the rollouts' mean score by iteration (int_prompt_iteration) where
     the run has neither.
   The phrase names which (reward_name).
   - held_out_collapse (critical): from one of its points to its last, every
     held-out point is at least `held_out_collapse_fraction` below its start
     (the mean of its first `held_out_start_points` points), over at least
     `held_out_collapse_min_points` points, while the reward's mean over
     those steps is not that far below its own start (its points up to the
     held-out start's last step, or its first point): the model got worse
     at the task while the reward it optimised held.
   - reward_held_out_divergence (warning): over a window of
     `divergence_window` held-out points running, or the whole run, the
     held-out metric's least-squares fit falls by at least
     `divergence_drop_fraction` of its fitted start, steadily (r-squared at
     least `rising_min_r2`), while the reward's fit over the same steps
     (at least `divergence_min_reward_points` points) rises steadily. #}
{%- set start_points = var('held_out_start_points') -%}
{%- set collapse_fraction = var('held_out_collapse_fraction') -%}
{%- set window = var('divergence_window') -%}
{{ finding_rule_start({
    'reward_steps': ref('int_reward_steps'),
    'score_steps': ref('int_prompt_iteration'),
    'held_out_points': ref('int_reward_held_out'),
}) }}
weighted_runs as (
    select distinct run_id
    from {{ ref('int_reward_weights') }}
),

held_out as (
    select
        run_id,
        step,
        performance_metric,
        performance as value,
        performance - lag(performance) over (partition by run_id order by step) as change,
        row_number() over (partition by run_id order by step) as n,
        count(*) over (partition by run_id) as points
    from held_out_points
),

logged_rewards as (
    select
        reward_steps.run_id,
        reward_steps.step,
        case
            when weighted_runs.run_id is null then 'reward_mean' else 'R'
        end as reward_name,
        reward_steps.mean as value
    from reward_steps
    left join weighted_runs on reward_steps.run_id = weighted_runs.run_id
    where {{ is_finite('reward_steps.mean') }}
),

scored_rewards as (
    {# A run with neither: its rollouts' mean score at each iteration. #}
    select
        run_id,
        iteration as step,
        'score' as reward_name,
        sum(mean_score * n_samples) / sum(n_samples) as value
    from score_steps
    where
        {{ is_finite('mean_score') }}
        and run_id not in (select logged_rewards.run_id from logged_rewards)
    group by 1, 2, 3
),

reward_series as (
    select * from logged_rewards
    union all
    select * from scored_rewards
),

rewards as (
    select
        run_id,
        step,
        reward_name,
        value,
        row_number() over (partition by run_id order by step) as n
    from reward_series
),

reward_names as (
    {# The reward each run is judged on, as its phrases name it. #}
    select
        run_id,
        case any_value(reward_name)
            when 'R' then 'R (the reward the trainer optimised)'
            when 'reward_mean' then 'reward_mean (no reward functions known)'
            else 'the mean score of the rollouts'
        end as reward_text
    from rewards
    group by 1
),

held_out_starts as (
    select
        run_id,
        any_value(performance_metric) as performance_metric,
        avg(value) as start_level,
        count(*) as start_count,
        max(step) as start_last_step
    from held_out
    where n <= {{ start_points }}
    group by 1
),

low_points as (
    {# Each point after the start, and whether it and every later point
       sit at least held_out_collapse_fraction below the start. #}
    select
        held_out.run_id,
        held_out.step,
        held_out.n,
        held_out.points,
        held_out.value,
        bool_and(
            held_out.value
            <= held_out_starts.start_level
            - {{ collapse_fraction }} * abs(held_out_starts.start_level)
        ) over (
            partition by held_out.run_id order by held_out.n
            rows between current row and unbounded following
        ) as is_low_to_end
    from held_out
    inner join held_out_starts on held_out.run_id = held_out_starts.run_id
    where held_out_starts.start_level > 0
),

collapses as (
    select
        low_points.run_id,
        min(low_points.step) as first_low_step,
        max(low_points.step) as last_step,
        count(*) as low_points,
        avg(low_points.value) as low_mean
    from low_points
    where low_points.is_low_to_end and low_points.n > {{ start_points }}
    group by 1
    having count(*) >= {{ var('held_out_collapse_min_points') }}
),

collapse_noise as (
    {# The held-out metric's own noise: sigma^2 = half the sample variance
       of its point-to-point changes, leaving out the change into the
       collapse (a fall is not noise). #}
    select
        collapses.run_id,
        sqrt(var_samp(held_out.change) / 2) as sigma
    from collapses
    inner join held_out
        on
            collapses.run_id = held_out.run_id
            and collapses.first_low_step <> held_out.step
    group by 1
),

reward_starts as (
    select
        rewards.run_id,
        avg(rewards.value) as reward_start
    from rewards
    inner join held_out_starts on rewards.run_id = held_out_starts.run_id
    where rewards.step <= held_out_starts.start_last_step or rewards.n = 1
    group by 1
),

reward_during as (
    select
        collapses.run_id,
        avg(rewards.value) as reward_during,
        count(*) as reward_points
    from collapses
    inner join rewards
        on
            collapses.run_id = rewards.run_id
            and rewards.step between collapses.first_low_step and collapses.last_step
    group by 1
),

held_collapses as (
    {# ... while the reward held. #}
    select
        collapses.*,
        held_out_starts.performance_metric,
        held_out_starts.start_level,
        reward_starts.reward_start,
        reward_during.reward_during,
        reward_during.reward_points,
        reward_names.reward_text
    from collapses
    inner join reward_names on collapses.run_id = reward_names.run_id
    inner join collapse_noise on collapses.run_id = collapse_noise.run_id
    inner join held_out_starts on collapses.run_id = held_out_starts.run_id
    inner join reward_starts on collapses.run_id = reward_starts.run_id
    inner join reward_during on collapses.run_id = reward_during.run_id
    where
        reward_during.reward_during
        > reward_starts.reward_start - {{ collapse_fraction }} * abs(reward_starts.reward_start)
        {# ... and the fall is no noise: at least held_out_t standard errors
            of the difference of the two means #}
        and held_out_starts.start_level - collapses.low_mean
        >= {{ var('held_out_t') }} * collapse_noise.sigma
        * sqrt(1.0 / held_out_starts.start_count + 1.0 / collapses.low_points)
),

windows as (
    {# Every window of divergence_window held-out points running, and the
       whole run when it holds more points than that. #}
    select
        held_out.run_id,
        held_out.step as last_step,
        min(member.step) as first_step,
        'window' as span
    from held_out
    inner join held_out as member
        on
            held_out.run_id = member.run_id
            and member.n between held_out.n - {{ window - 1 }} and held_out.n
    where held_out.n >= {{ window }}
    group by 1, 2
    union all
    select
        run_id,
        max(step) as last_step,
        min(step) as first_step,
        'run' as span
    from held_out
    group by 1
    having count(*) > {{ window }}
),

held_out_noise as (
    {# The held-out metric's point-to-point noise over the run: sigma^2 =
       half the sample variance of its changes (a steady trend moves their
       mean, not their spread). #}
    select
        run_id,
        sqrt(var_samp(change) / 2) as sigma
    from held_out
    group by 1
),

held_out_fits as (
    {{ window_line_fits('held_out', [
        'any_value(held_out.performance_metric) as performance_metric',
    ]) }}
),

reward_fits as (
    {{ window_line_fits('rewards') }}
),

fitted as (
    select
        held_out_fits.run_id,
        held_out_fits.first_step,
        held_out_fits.last_step,
        held_out_fits.span,
        held_out_fits.performance_metric,
        held_out_fits.r_squared as held_out_r_squared,
        held_out_fits.points as held_out_points,
        held_out_noise.sigma as held_out_sigma,
        held_out_fits.start_value as held_out_start,
        held_out_fits.end_value as held_out_end,
        reward_fits.r_squared as reward_r_squared,
        reward_fits.points as reward_points,
        reward_fits.start_value as reward_start,
        reward_fits.end_value as reward_end,
        held_out_fits.slope as held_out_slope,
        reward_fits.slope as reward_slope,
        reward_names.reward_text
    from held_out_fits
    inner join reward_names on held_out_fits.run_id = reward_names.run_id
    inner join held_out_noise on held_out_fits.run_id = held_out_noise.run_id
    inner join reward_fits
        on
            held_out_fits.run_id = reward_fits.run_id
            and held_out_fits.first_step = reward_fits.first_step
            and held_out_fits.last_step = reward_fits.last_step
),

divergences as (
    select
        *,
        (held_out_start - held_out_end) / abs(held_out_start) as held_out_fall,
        {{ divide('reward_end - reward_start', 'abs(reward_start)') }} as reward_rise
    from fitted
    where
        held_out_slope < 0
        and held_out_start <> 0
        and (held_out_start - held_out_end)
        >= {{ var('divergence_drop_fraction') }} * abs(held_out_start)
        and held_out_r_squared >= {{ var('rising_min_r2') }}
        {# the fall is significant: the fit's t = sqrt(r^2 (n - 2) / (1 -
            r^2)) at least held_out_t, i.e. r^2 (n - 2) >= t^2 (1 - r^2) #}
        and held_out_r_squared * (held_out_points - 2)
        >= {{ var('held_out_t') }} * {{ var('held_out_t') }} * (1 - held_out_r_squared)
        {# ... and larger than one evaluation's noise could show #}
        and held_out_start - held_out_end >= {{ var('held_out_t') }} * held_out_sigma
        and reward_points >= {{ var('divergence_min_reward_points') }}
        and reward_slope > 0
        and reward_r_squared >= {{ var('rising_min_r2') }}
),

signals as (
    select
        run_id,
        'held_out_collapse' as pattern,
        'held_out_collapsed' as signal,
        first_low_step as start_step,
        last_step as step,
        3 as severity_rank,
        (start_level - low_mean) / abs(start_level) as strength,
        performance_metric || ' averaged ' || cast({{ round_to('low_mean', 3) }} as string)
        || ' over its ' || low_points || ' points from step ' || first_low_step
        || ' to its last at step ' || last_step || ', '
        || cast(cast(round(100 * (start_level - low_mean) / abs(start_level)) as bigint) as string)
        || '% below its start ' || cast({{ round_to('start_level', 3) }} as string)
        || ', while ' || reward_text || ' held ('
        || cast({{ round_to('reward_during', 3) }} as string)
        || ' over those steps against ' || cast({{ round_to('reward_start', 3) }} as string)
        || ' at the start)' as phrase,
        {{ key_value_list([
            ("'held_out_start'", 'start_level'),
            ("'held_out_after'", 'low_mean'),
            ("'held_out_fall'", '(start_level - low_mean) / abs(start_level)'),
            ("'reward_start'", 'reward_start'),
            ("'reward_after'", 'reward_during'),
        ]) }} as measures
    from held_collapses
    union all
    select
        run_id,
        'reward_held_out_divergence' as pattern,
        case when span = 'run' then 'diverged_over_run' else 'diverged_in_window' end as signal,
        first_step as start_step,
        last_step as step,
        2 as severity_rank,
        held_out_fall as strength,
        performance_metric || ' fell ' || cast(cast(round(100 * held_out_fall) as bigint) as string)
        || '% over steps ' || first_step || '-' || last_step
        || case when span = 'run' then ' (the whole run)' else '' end
        || ' (fitted ' || cast({{ round_to('held_out_start', 3) }} as string) || ' to '
        || cast({{ round_to('held_out_end', 3) }} as string)
        || ') while ' || reward_text || ' rose (fitted '
        || cast({{ round_to('reward_start', 3) }} as string)
        || ' to ' || cast({{ round_to('reward_end', 3) }} as string) || ', r-squared '
        || cast({{ round_to('reward_r_squared', 2) }} as string) || ')' as phrase,
        {{ key_value_list([
            ("'held_out_start'", 'held_out_start'),
            ("'held_out_end'", 'held_out_end'),
            ("'held_out_fall'", 'held_out_fall'),
            ("'reward_start'", 'reward_start'),
            ("'reward_end'", 'reward_end'),
            ("'reward_rise'", 'reward_rise'),
            ("'reward_r_squared'", 'reward_r_squared'),
        ]) }} as measures
    from divergences
)

{{ finding_rule_end() }}
