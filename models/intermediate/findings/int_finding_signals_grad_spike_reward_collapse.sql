{# The rule grad_spike_reward_collapse: a gradient-norm excursion followed,
   within `collapse_window` steps, by a lasting fall of the reward (its mean
   over `collapse_min_points` points well below its level before the spike,
   beyond what noise gives a run this long).

   Burn-in: a spike among the run's first points (scored on its
   step-to-step change, int_metric_scores) often comes before the reward
   has the `spike_min_history` points of a trailing median. Its level
   before the spike is then the median of the reward's points at or before
   the spike's step (the reward of that step was sampled before its
   update), with the error of a median of that many points. #}
{%- set spike_z = var('spike_z') -%}
{%- set spike_window = var('spike_window') -%}
{%- set min_history = var('spike_min_history') -%}
{{ finding_rule_start({
    'stats': ref('int_metric_scores'),
}) }}
grad_spikes as (
    select
        run_id,
        step as spike_step,
        value as grad_norm,
        z as grad_z,
        trailing_median as grad_trailing_median,
        is_burn_in as is_burn_in_spike,
        burn_in_reference as grad_before
    from stats
    where metric = 'grad_norm' and z > {{ spike_z }}
),

later_levels as (
    {# The gradient norm's level after its first point. #}
    select
        run_id,
        {{ median('value') }} as later_median,
        count(*) as later_points
    from stats
    where metric = 'grad_norm' and n between 2 and {{ spike_window + 1 }}
    group by 1
),

first_point_spikes as (
    select
        first_point.run_id,
        first_point.step as spike_step,
        first_point.value as grad_norm,
        (ln(first_point.value) - ln(later_levels.later_median))
        / first_point.noise_scale as grad_z,
        later_levels.later_median as grad_trailing_median,
        false as is_burn_in_spike,
        later_levels.later_median as grad_before,
        true as is_first_point
    from stats as first_point
    inner join later_levels on first_point.run_id = later_levels.run_id
    where
        first_point.metric = 'grad_norm'
        and first_point.n = 1
        and later_levels.later_points >= {{ min_history }}
        and first_point.value
        >= {{ var('first_point_spike_ratio') }} * later_levels.later_median
        and (
            first_point.noise_scale is null
            or (ln(first_point.value) - ln(later_levels.later_median))
            / first_point.noise_scale > {{ spike_z }}
        )
),

all_spikes as (
    select
        *,
        false as is_first_point
    from grad_spikes
    union all
    select * from first_point_spikes
),

reward_moving as (
    {# The reward's mean over each run of `collapse_min_points` points: a
       collapse is a drop that lasts, not one bad batch. #}
    select
        run_id,
        step,
        n,
        avg(value) over run_of_points as run_mean,
        count(*) over run_of_points as run_points
    from stats
    where metric = 'reward_mean'
    window run_of_points as (
        partition by run_id order by n
        rows between current row and {{ var('collapse_min_points') - 1 }} following
    )
),

reward_after_spike as (
    {# The first reward point at or after the spike: its trailing median
       holds only earlier points. #}
    select
        run_id,
        spike_step,
        grad_norm,
        grad_z,
        grad_trailing_median,
        is_burn_in_spike,
        grad_before,
        is_first_point,
        trailing_median,
        reward_noise,
        reward_points_before
    from (
        select
            all_spikes.*,
            reward.trailing_median,
            reward.noise_scale as reward_noise,
            reward.trailing_points as reward_points_before,
            row_number() over (
                partition by all_spikes.run_id, all_spikes.spike_step order by reward.step
            ) as reward_rank
        from all_spikes
        inner join stats as reward
            on
                all_spikes.run_id = reward.run_id
                and reward.metric = 'reward_mean'
                and all_spikes.spike_step <= reward.step
    ) as rewards_after_spike
    where reward_rank = 1
),

reward_at_start as (
    {# Burn-in: the reward's points at or before the spike's step. #}
    select
        all_spikes.run_id,
        all_spikes.spike_step,
        {{ median('reward.value') }} as early_median,
        count(*) as early_points
    from all_spikes
    inner join stats as reward
        on
            all_spikes.run_id = reward.run_id
            and reward.metric = 'reward_mean'
            and all_spikes.spike_step >= reward.step
    group by 1, 2
),

reward_before_spike as (
    {# The reward's level just before the spike, and how many points that
       level is measured on (a trailing median's error taken as that of
       spike_window points, as before; a burn-in median's as that of its
       own points). #}
    select
        reward_after_spike.*,
        case
            when reward_after_spike.reward_points_before >= {{ min_history }}
                then reward_after_spike.trailing_median
            else reward_at_start.early_median
        end as reward_before,
        case
            when reward_after_spike.reward_points_before >= {{ min_history }}
                then {{ spike_window }}
            else reward_at_start.early_points
        end as baseline_points,
        reward_after_spike.reward_points_before < {{ min_history }} as is_early_baseline
    from reward_after_spike
    left join reward_at_start
        on
            reward_after_spike.run_id = reward_at_start.run_id
            and reward_after_spike.spike_step = reward_at_start.spike_step
),

collapsed_points as (
    select
        reward_before_spike.*,
        moving.step as reward_step,
        moving.run_mean as reward,
        {# (a noiseless reward's drop is infinitely many standard errors) #}
        {{ divide(
            'reward_before_spike.reward_before - moving.run_mean',
            'reward_before_spike.reward_noise * sqrt(1.0 / moving.run_points'
            ~ ' + 1.0 / reward_before_spike.baseline_points)'
        ) }} as drop_z
    from reward_before_spike
    inner join judged_runs on reward_before_spike.run_id = judged_runs.run_id
    inner join reward_moving as moving
        on
            reward_before_spike.run_id = moving.run_id
            and moving.step between reward_before_spike.spike_step
            and reward_before_spike.spike_step + {{ var('collapse_window') }}
    where
        reward_before_spike.reward_before is not null
        and moving.run_points = {{ var('collapse_min_points') }}
        and moving.run_mean <= (
            reward_before_spike.reward_before
            - {{ var('collapse_drop_fraction') }} * abs(reward_before_spike.reward_before)
        )
        {# Every spike's window is searched: beyond what noise gives a run
           this long, not just spike_z. #}
        and (reward_before_spike.reward_before - moving.run_mean) > judged_runs.excursion_z * (
            reward_before_spike.reward_noise
            * sqrt(1.0 / moving.run_points + 1.0 / reward_before_spike.baseline_points)
        )
),

collapses as (
    select
        run_id,
        spike_step,
        any_value(grad_norm) as grad_norm,
        any_value(grad_z) as grad_z,
        any_value(grad_trailing_median) as grad_trailing_median,
        any_value(is_burn_in_spike) as is_burn_in_spike,
        any_value(grad_before) as grad_before,
        any_value(is_first_point) as is_first_point,
        any_value(reward_before) as reward_before,
        any_value(is_early_baseline) as is_early_baseline,
        min(reward) as reward_min,
        {{ arg_min('reward_step', 'reward') }} as collapse_step,
        max(drop_z) as drop_z
    from collapsed_points
    group by 1, 2
),

signals as (
    select
        run_id,
        'grad_spike_reward_collapse' as pattern,
        'grad_norm_spike' as signal,
        spike_step as start_step,
        spike_step as step,
        3 as severity_rank,
        grad_z as strength,
        'grad_norm reached ' || cast({{ round_to('grad_norm', 3) }} as string)
        || ' at step ' || spike_step
        || case
            when is_first_point
                then
                    ', ' || cast({{ round_to('grad_norm / grad_before', 1) }} as string)
                    || 'x the median ' || cast({{ round_to('grad_before', 3) }} as string)
                    || ' of the points after it, z '
                    || coalesce(cast({{ round_to('grad_z', 1) }} as string), '-')
                    || ' (first point: nothing before it)'
            when is_burn_in_spike
                then
                    ' from ' || cast({{ round_to('grad_before', 3) }} as string)
                    || ' the point before, z '
                    || cast({{ round_to('grad_z', 1) }} as string)
                    || ' against its step-to-step changes (burn-in)'
            else
                ', z ' || cast({{ round_to('grad_z', 1) }} as string)
                || ' above its trailing median '
                || cast({{ round_to('grad_trailing_median', 3) }} as string)
        end as phrase,
        {{ key_value_list([
            ("'grad_norm'", 'grad_norm'),
            ("'grad_norm_z'", 'grad_z'),
            ("'spike_step'", 'cast(spike_step as double)'),
        ]) }} as measures
    from collapses
    union all
    select
        run_id,
        'grad_spike_reward_collapse' as pattern,
        'reward_collapse' as signal,
        spike_step as start_step,
        collapse_step as step,
        3 as severity_rank,
        drop_z as strength,
        'then reward_mean averaged ' || cast({{ round_to('reward_min', 3) }} as string)
        || ' over the {{ var("collapse_min_points") }} points from step ' || collapse_step || ', '
        || cast(
            cast(
                round(100 * (reward_before - reward_min) / nullif(abs(reward_before), 0))
                as bigint
            ) as string
        )
        || case
            when is_early_baseline then '% below its median up to the spike '
            else '% below its trailing median '
        end
        || cast({{ round_to('reward_before', 3) }} as string)
        || ' (z ' || cast({{ round_to('drop_z', 1) }} as string) || ')' as phrase,
        {{ key_value_list([
            ("'reward_before'", 'reward_before'),
            ("'reward_min'", 'reward_min'),
            ("'drop_fraction'", '(reward_before - reward_min) / nullif(abs(reward_before), 0)'),
            ("'reward_drop_z'", 'drop_z'),
            ("'collapse_step'", 'cast(collapse_step as double)'),
            ("'steps_to_collapse'", 'cast(collapse_step - spike_step as double)'),
        ]) }} as measures
    from collapses
)

{{ finding_rule_end() }}
