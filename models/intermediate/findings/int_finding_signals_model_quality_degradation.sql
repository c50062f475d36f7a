{# The rule model_quality_degradation: the extraction rate below its minimum
   two points running, empty responses rising well above their earlier
   level, and the reward falling while the loss stays low (not right after a
   gradient spike: that is a collapse). #}
{{ finding_rule_start({
    'stats': ref('int_metric_scores'),
}) }}
{%- set window = var('plateau_window') %}
{%- set min_history = var('spike_min_history') %}

signals as (
    select
        run_id,
        'model_quality_degradation' as pattern,
        'extraction_below_min' as signal,
        step as start_step,
        step,
        2 as severity_rank,
        -value as strength,
        'extraction_rate ' || cast({{ round_to('value', 3) }} as string) || ' at step ' || step
        || ', below '
        || '{{ var("extraction_rate_min") }}' as phrase,
        {{ key_value_list([
            ("'extraction_rate'", 'value'),
            ("'extraction_rate_min'", "cast(" ~ var('extraction_rate_min') ~ " as double)"),
        ]) }} as measures
    from (
        select
            *,
            lag(value) over (partition by run_id order by n) as previous_value
        from stats
        where metric = 'extraction_rate'
    ) as extraction_points
    {#- Below the minimum two points running: one low batch is noise. #}
    where
        value < {{ var('extraction_rate_min') }}
        and previous_value < {{ var('extraction_rate_min') }}
    union all
    select
        run_id,
        'model_quality_degradation' as pattern,
        'empty_responses_rising' as signal,
        window_first_step as start_step,
        step,
        2 as severity_rank,
        window_mean / greatest(baseline_mean, 1) as strength,
        'empty_responses averaged ' || cast({{ round_to('window_mean', 1) }} as string)
        || ' a step over steps ' || window_first_step || '-' || step || ', up from '
        || cast({{ round_to('baseline_mean', 1) }} as string)
            as phrase,
        {{ key_value_list([
            ("'empty_responses_window_mean'", 'window_mean'),
            ("'empty_responses_baseline_mean'", 'baseline_mean'),
            ("'empty_responses_slope'", 'window_slope'),
        ]) }} as measures
    from stats
    where
        metric = 'empty_responses'
        and window_points = {{ window }}
        and baseline_points >= {{ min_history }}
        and window_slope > 0
        and window_mean > {{ var('empty_responses_rise_factor') }} * greatest(baseline_mean, 1)
    union all
    select
        reward.run_id,
        'model_quality_degradation' as pattern,
        'reward_falling' as signal,
        reward.window_first_step as start_step,
        reward.step,
        2 as severity_rank,
        -reward.window_slope as strength,
        'reward_mean fell ' || cast({{ round_to('-reward.window_slope', 4) }} as string)
        || ' a step over steps ' || reward.window_first_step || '-' || reward.step
        || ' to a mean of ' || cast({{ round_to('reward.window_mean', 3) }} as string) || ' from '
        || cast({{ round_to('reward.baseline_mean', 3) }} as string) || ' before'
        || case
            when loss.step is not null
                then
                    ', while loss stayed low ('
                    || cast({{ round_to('loss.window_mean', 3) }} as string)
                    || ' against ' || cast({{ round_to('loss.baseline_mean', 3) }} as string) || ')'
            else ' (no loss logged)'
        end as phrase,
        {{ key_value_list([
            ("'reward_mean_slope'", 'reward.window_slope'),
            ("'reward_mean_window_mean'", 'reward.window_mean'),
            ("'reward_mean_baseline_mean'", 'reward.baseline_mean'),
            ("'reward_mean_drop_z'", 'reward.drop_z'),
            ("'loss_window_mean'", 'loss.window_mean'),
            ("'loss_baseline_mean'", 'loss.baseline_mean'),
        ]) }} as measures
    from (
        {#- How far the window's mean sits below the baseline's, in standard
            errors of the difference. #}
        select
            *,
            (baseline_mean - window_mean)
            / (baseline_std * sqrt(1.0 / window_points + 1.0 / baseline_points)) as drop_z
        from stats
        where metric = 'reward_mean' and baseline_std > 0
    ) as reward
    inner join judged_runs on reward.run_id = judged_runs.run_id
    {#- Where a loss is logged it must not have risen (the analysis's "despite
        low loss"); a run without one is judged on its reward alone. #}
    left join stats as loss
        on
            reward.run_id = loss.run_id
            and reward.step = loss.step
            and loss.metric = 'loss'
            and loss.window_points = {{ window }}
            and loss.baseline_points >= {{ min_history }}
    {#- A fall right after a gradient spike (a grad_norm excursion, as in the
        collapse rule) is a collapse, not a drift. #}
    anti join stats as grad_spikes
        on
            reward.run_id = grad_spikes.run_id
            and grad_spikes.metric = 'grad_norm'
            and grad_spikes.z > {{ var('spike_z') }}
            and grad_spikes.step
            between reward.window_first_step - {{ var('collapse_window') }} and reward.step
    where
        reward.window_points = {{ window }}
        and reward.baseline_points >= {{ min_history }}
        and reward.window_slope < -{{ var('plateau_slope_eps') }}
        {#- Judged at every point, so beyond what noise gives a run this long. #}
        and reward.drop_z > judged_runs.excursion_z
        {#- ... and by more than a fall at the flat-slope limit loses over a window. #}
        and reward.baseline_mean - reward.window_mean > (
            {{ window }} * {{ var('plateau_slope_eps') }}
        )
        and (loss.step is null or loss.window_mean <= loss.baseline_mean)
)

{{ finding_rule_end() }}
