{# What went wrong in a run, and when, as rows a person can act on: each rule
   turns steps into flagged points (signals), signals of one pattern closer
   than `finding_episode_gap` steps make one episode, and each episode gets a
   severity, its evidence as numbers, the hypotheses of the
   `finding_hypotheses` seed and one sentence saying what was seen.

   The rules are tuned so that a healthy run (noisy but improving reward,
   falling loss, small KL, stable gradient norm) raises no warning: a trailing
   z-score above `spike_z` turns up about once in a few hundred steps of pure
   noise, so a lone excursion is `info`; only one beyond `spike_z_warning`,
   a failure, or a sustained change is a warning. A run without the metrics a
   rule reads gets no finding from it. #}
{%- set spike_z = var('spike_z') -%}
{%- set spike_z_warning = var('spike_z_warning') -%}
{%- set spike_window = var('spike_window') -%}
{%- set min_history = var('spike_min_history') -%}
{%- set window = var('plateau_window') -%}
with

history as (
    select * from {{ ref('fct_metric_history') }}
    where canonical_metric in (
        'loss', 'grad_norm', 'reward_mean', 'extraction_rate', 'empty_responses',
        'entropy', 'kl', 'clip_ratio', 'response_length', 'elo', 'cache_hit_rate'
    )
),

reliability as (
    select * from {{ ref('fct_rollout_reliability') }}
),

cache_stats as (
    select * from {{ ref('fct_cache_stats') }}
),

power_law as (
    select * from {{ ref('fct_power_law_fit') }}
    where scope = 'run'
),

hypotheses as (
    select * from {{ ref('finding_hypotheses') }}
),

-- ---------------------------------------------------------------- series

finite_points as (
    select
        run_id,
        canonical_metric as metric,
        step,
        value
    from history
    where isfinite(value)
),

series as (
    {# Each metric's finite points, plus reward_mean's step-to-step change
       (`reward_mean_change`): a trend cancels out of it, so a swing of the
       reward stands out against the trailing changes. #}
    select run_id, metric, step, value from finite_points
    union all
    select
        run_id,
        'reward_mean_change' as metric,
        step,
        value - lag(value) over (partition by run_id order by step) as value
    from finite_points
    where metric = 'reward_mean'
),

numbered as (
    select
        *,
        row_number() over (partition by run_id, metric order by step) as n
    from series
    where value is not null
),

trailing_stats as (
    {# Per point: the `spike_window` points before it (for z-scores); every
       point before its own plateau window (for "a new max?"); and the
       `spike_window` points before that window (a baseline level). #}
    select
        *,
        avg(value) over prior as trailing_mean,
        stddev_samp(value) over prior as trailing_std,
        count(*) over prior as trailing_points,
        max(value) over before_window as prior_max,
        count(*) over before_window as prior_points,
        arg_max(step, value) over before_window as prior_max_step,
        avg(value) over baseline as baseline_mean,
        stddev_samp(value) over baseline as baseline_std,
        count(*) over baseline as baseline_points
    from numbered
    window
        prior as (
            partition by run_id, metric order by n
            rows between {{ spike_window }} preceding and 1 preceding
        ),
        before_window as (
            partition by run_id, metric order by n
            rows between unbounded preceding and {{ window }} preceding
        ),
        baseline as (
            partition by run_id, metric order by n
            rows between {{ window + spike_window - 1 }} preceding and {{ window }} preceding
        )
),

windows as (
    {# The last `plateau_window` points up to each point, for the metrics
       whose rules look at a trend. #}
    select
        point.run_id,
        point.metric,
        point.n,
        min(member.step) as window_first_step,
        count(*) as window_points,
        {{ regression_slope('member.value', 'member.step') }} as window_slope,
        case
            when var_pop(member.value) > 0 and var_pop(member.step) > 0
                then power(corr(member.value, member.step), 2)
        end as window_r2,
        avg(member.value) as window_mean,
        stddev_samp(member.value) as window_std,
        max(member.value) as window_max
    from numbered as point
    {#- An equality join on each offset, so the cost grows with the points
        times the window, not with the points squared. #}
    cross join (
        values {% for offset in range(window) %}({{ offset }}){{ ", " if not loop.last }}{% endfor %}
    ) as offsets (back)
    inner join numbered as member
        on point.run_id = member.run_id
        and point.metric = member.metric
        and member.n = point.n - offsets.back
    where point.metric in (
        'reward_mean', 'elo', 'loss', 'empty_responses', 'kl', 'clip_ratio', 'response_length'
    )
    group by point.run_id, point.metric, point.n
),

stats as (
    select
        trailing_stats.run_id,
        trailing_stats.metric,
        trailing_stats.step,
        trailing_stats.n,
        trailing_stats.value,
        trailing_stats.trailing_mean,
        trailing_stats.trailing_std,
        trailing_stats.trailing_points,
        case
            when trailing_stats.trailing_points >= {{ min_history }}
                and trailing_stats.trailing_std > 0
                then (trailing_stats.value - trailing_stats.trailing_mean)
                    / trailing_stats.trailing_std
        end as z,
        trailing_stats.prior_max,
        trailing_stats.prior_max_step,
        trailing_stats.prior_points,
        trailing_stats.baseline_mean,
        trailing_stats.baseline_std,
        trailing_stats.baseline_points,
        windows.window_first_step,
        windows.window_points,
        windows.window_slope,
        windows.window_r2,
        windows.window_mean,
        windows.window_std,
        windows.window_max
    from trailing_stats
    left join windows using (run_id, metric, n)
),

-- ---------------------------------------------------------------- training_instability

instability_spikes as (
    {# Loss or gradient-norm spikes, swings of the reward, sudden drops of
       the extraction rate; a lone excursion is info, beyond spike_z_warning
       a warning. #}
    select
        run_id,
        'training_instability' as pattern,
        case metric
            when 'loss' then 'loss_spike'
            when 'grad_norm' then 'grad_norm_spike'
            when 'reward_mean_change' then 'reward_swing'
            else 'extraction_drop'
        end as signal,
        step as start_step,
        step,
        case
            when abs(z) >= {{ spike_z_warning }} and trailing_points = {{ spike_window }} then 2
            else 1
        end as severity_rank,
        abs(z) as strength,
        case metric
            when 'reward_mean_change' then
                'reward_mean moved by ' || cast(round(value, 3) as varchar) || ' at step ' || step
                || ', z ' || cast(round(z, 1) as varchar) || ' against its trailing changes'
            when 'extraction_rate' then
                'extraction_rate fell to ' || cast(round(value, 3) as varchar)
                || ' at step ' || step
                || ', z ' || cast(round(z, 1) as varchar) || ' against its trailing mean '
                || cast(round(trailing_mean, 3) as varchar)
            else
                metric || ' reached ' || cast(round(value, 3) as varchar) || ' at step ' || step
                || ', z ' || cast(round(z, 1) as varchar) || ' against its trailing mean '
                || cast(round(trailing_mean, 3) as varchar)
        end as phrase,
        [
            {'key': metric, 'value': value},
            {'key': metric || '_z', 'value': z},
            {'key': metric || '_trailing_mean', 'value': trailing_mean}
        ] as measures
    from stats
    where (metric in ('loss', 'grad_norm') and z > {{ spike_z }})
        or (metric = 'reward_mean_change' and abs(z) > {{ spike_z }})
        or (metric = 'extraction_rate' and z < -{{ spike_z }})
),

instability_non_finite as (
    select
        run_id,
        'training_instability' as pattern,
        canonical_metric || '_non_finite' as signal,
        step as start_step,
        step,
        3 as severity_rank,
        cast(1e9 as double) as strength,
        canonical_metric || ' was ' || cast(value as varchar) || ' at step ' || step as phrase,
        [{'key': canonical_metric || '_non_finite_step', 'value': cast(step as double)}]
            as measures
    from history
    where canonical_metric in ('loss', 'grad_norm') and not isfinite(value)
),

-- ---------------------------------------------------------------- grad_spike_reward_collapse

grad_spikes as (
    select
        run_id,
        step as spike_step,
        value as grad_norm,
        z as grad_z,
        trailing_mean as grad_trailing_mean
    from stats
    where metric = 'grad_norm' and z > {{ spike_z }}
),

reward_before_spike as (
    {# The reward's level just before the spike: the trailing window of the
       first reward point at or after it (which holds only earlier points). #}
    select
        grad_spikes.*,
        reward.trailing_mean as reward_before,
        reward.trailing_std as reward_std_before,
        reward.trailing_points as reward_points_before
    from grad_spikes
    inner join stats as reward
        on grad_spikes.run_id = reward.run_id
        and reward.metric = 'reward_mean'
        and reward.step >= grad_spikes.spike_step
    qualify row_number() over (
        partition by grad_spikes.run_id, grad_spikes.spike_step order by reward.step
    ) = 1
),

collapsed_points as (
    select
        reward_before_spike.*,
        reward.step as reward_step,
        reward.value as reward
    from reward_before_spike
    inner join stats as reward
        on reward_before_spike.run_id = reward.run_id
        and reward.metric = 'reward_mean'
        and reward.step between reward_before_spike.spike_step
        and reward_before_spike.spike_step + {{ var('collapse_window') }}
    where reward_before_spike.reward_points_before >= {{ min_history }}
        and reward_before_spike.reward_std_before > 0
        and reward.value < reward_before_spike.reward_before
            - {{ spike_z }} * reward_before_spike.reward_std_before
        and reward.value <= reward_before_spike.reward_before
            - {{ var('collapse_drop_fraction') }} * abs(reward_before_spike.reward_before)
),

collapses as (
    select
        run_id,
        spike_step,
        any_value(grad_norm) as grad_norm,
        any_value(grad_z) as grad_z,
        any_value(grad_trailing_mean) as grad_trailing_mean,
        any_value(reward_before) as reward_before,
        min(reward) as reward_min,
        arg_min(reward_step, reward) as collapse_step
    from collapsed_points
    group by run_id, spike_step
),

collapse_signals as (
    select
        run_id,
        'grad_spike_reward_collapse' as pattern,
        'grad_norm_spike' as signal,
        spike_step as start_step,
        spike_step as step,
        3 as severity_rank,
        grad_z as strength,
        'grad_norm reached ' || cast(round(grad_norm, 3) as varchar) || ' at step ' || spike_step
        || ', z ' || cast(round(grad_z, 1) as varchar) || ' against its trailing mean '
        || cast(round(grad_trailing_mean, 3) as varchar) as phrase,
        [
            {'key': 'grad_norm', 'value': grad_norm},
            {'key': 'grad_norm_z', 'value': grad_z},
            {'key': 'spike_step', 'value': cast(spike_step as double)}
        ] as measures
    from collapses
    union all
    select
        run_id,
        'grad_spike_reward_collapse' as pattern,
        'reward_collapse' as signal,
        spike_step as start_step,
        collapse_step as step,
        3 as severity_rank,
        (reward_before - reward_min) / nullif(abs(reward_before), 0) as strength,
        'then reward_mean fell to ' || cast(round(reward_min, 3) as varchar)
        || ' at step ' || collapse_step || ', '
        || cast(
            cast(
                round(100 * (reward_before - reward_min) / nullif(abs(reward_before), 0))
                as bigint
            ) as varchar
        )
        || '% below its trailing mean ' || cast(round(reward_before, 3) as varchar) as phrase,
        [
            {'key': 'reward_before', 'value': reward_before},
            {'key': 'reward_min', 'value': reward_min},
            {
                'key': 'drop_fraction',
                'value': (reward_before - reward_min) / nullif(abs(reward_before), 0)
            },
            {'key': 'collapse_step', 'value': cast(collapse_step as double)},
            {'key': 'steps_to_collapse', 'value': cast(collapse_step - spike_step as double)}
        ] as measures
    from collapses
),

-- ---------------------------------------------------------------- performance_plateau

flat_windows as (
    {# A window of `plateau_window` points with a flat least-squares line and
       no new maximum, once at least one window of history precedes it. #}
    select
        stats.run_id,
        stats.metric,
        stats.step,
        stats.window_first_step,
        stats.window_slope,
        stats.window_mean,
        stats.window_std,
        stats.prior_max,
        stats.prior_max_step
    from stats
    where stats.metric in ('reward_mean', 'elo')
        and stats.window_points = {{ window }}
        and stats.prior_points >= {{ window }}
        and abs(stats.window_slope) < case stats.metric
            when 'reward_mean' then {{ var('plateau_slope_eps') }}
            else {{ var('elo_plateau_slope_eps') }}
        end
        {#- No new high: the window's best beats the earlier best by less than
            the slowest acceptable improvement adds over one window. #}
        and stats.window_max <= stats.prior_max + {{ window }} * case stats.metric
            when 'reward_mean' then {{ var('plateau_slope_eps') }}
            else {{ var('elo_plateau_slope_eps') }}
        end
),

horizons as (
    {#- How far ahead a flat window looks for progress: a tenth of the series
        (`plateau_horizon_fraction`), at least one window. -#}
    select
        run_id,
        metric,
        max(n) as last_n,
        greatest(
            {{ window }},
            cast(round({{ var('plateau_horizon_fraction') }} * count(*)) as integer)
        ) as horizon
    from numbered
    where metric in ('reward_mean', 'elo')
    group by run_id, metric
),

plateau_windows as (
    {#- Late in a long healthy run each window is flat within its noise (the
        reward climbs by less than plateau_slope_eps a step) while the reward
        still rises over a longer stretch. So a flat window is a plateau only
        when the reward made no progress over the horizon after it either:
        the window a horizon later (or the last one, when the series ends
        sooner) is not above it by two standard errors of their difference.
        A window less than one window from the series' end is not judged yet. -#}
    select
        flat_windows.*,
        horizons.last_n - here.n >= horizons.horizon as full_horizon
    from flat_windows
    inner join horizons using (run_id, metric)
    inner join stats as here
        on flat_windows.run_id = here.run_id
        and flat_windows.metric = here.metric
        and flat_windows.step = here.step
    inner join windows as later
        on here.run_id = later.run_id
        and here.metric = later.metric
        and later.n = here.n + least(horizons.horizon, horizons.last_n - here.n)
    where horizons.last_n - here.n >= {{ window }}
        and later.window_mean - here.window_mean < 2 * sqrt(
            (coalesce(power(later.window_std, 2), 0) + coalesce(power(here.window_std, 2), 0))
            / {{ window }}
        )
),

plateau_signals as (
    select
        run_id,
        'performance_plateau' as pattern,
        {#- A window judged on less than a full horizon (near the series' end)
            is `..._recent`: it cannot make a plateau a warning by itself. -#}
        case metric when 'reward_mean' then 'reward_plateau' else 'elo_plateau' end
        || case when full_horizon then '' else '_recent' end as signal,
        {#- It began at the last new high (at the window's start at the latest). #}
        least(prior_max_step, window_first_step) as start_step,
        step,
        2 as severity_rank,
        {#- The first flat window stands for the episode. #}
        -cast(step as double) as strength,
        metric || ' reached ' || cast(round(prior_max, 3) as varchar) || ' at step '
        || prior_max_step || ' and then stayed flat: over steps ' || window_first_step || '-'
        || step || ' its slope was ' || cast(round(window_slope, 5) + 0.0 as varchar)
        || ' a step (mean ' || cast(round(window_mean, 3) as varchar) || ') with no new high'
            as phrase,
        [
            {'key': metric || '_slope', 'value': window_slope},
            {'key': metric || '_window_mean', 'value': window_mean},
            {'key': metric || '_prior_max', 'value': prior_max},
            {'key': metric || '_prior_max_step', 'value': cast(prior_max_step as double)},
            {'key': 'plateau_window', 'value': cast({{ window }} as double)}
        ] as measures
    from plateau_windows
),

-- ---------------------------------------------------------------- infrastructure_bottleneck

infrastructure_signals as (
    select
        run_id,
        'infrastructure_bottleneck' as pattern,
        'failed_rollouts' as signal,
        step as start_step,
        step,
        2 as severity_rank,
        failed_rollouts as strength,
        cast(cast(round(failed_rollouts) as bigint) as varchar) || ' failed rollouts at step '
        || step as phrase,
        [{'key': 'failed_rollouts', 'value': failed_rollouts}] as measures
    from reliability
    where is_failure
    union all
    select
        run_id,
        'infrastructure_bottleneck' as pattern,
        'max_total_s_spike' as signal,
        step as start_step,
        step,
        case
            when max_total_s_z >= {{ spike_z_warning }}
                and max_total_s_trailing_points = {{ spike_window }}
                and max_total_s >= {{ var('spike_min_ratio') }} * max_total_s_trailing_mean then 2
            else 1
        end as severity_rank,
        max_total_s_z as strength,
        'the slowest game took ' || cast(round(max_total_s, 1) as varchar) || ' s at step ' || step
        || ', z ' || cast(round(max_total_s_z, 1) as varchar) || ' against its trailing mean '
        || cast(round(max_total_s_trailing_mean, 1) as varchar) || ' s' as phrase,
        [
            {'key': 'max_total_s', 'value': max_total_s},
            {'key': 'max_total_s_z', 'value': max_total_s_z},
            {'key': 'max_total_s_trailing_mean', 'value': max_total_s_trailing_mean}
        ] as measures
    from reliability
    where is_total_spike
    union all
    select
        run_id,
        'infrastructure_bottleneck' as pattern,
        'max_volume_reload_s_spike' as signal,
        step as start_step,
        step,
        case
            when max_volume_reload_s_z >= {{ spike_z_warning }}
                and max_volume_reload_s_trailing_points = {{ spike_window }}
                and max_volume_reload_s
                >= {{ var('spike_min_ratio') }} * max_volume_reload_s_trailing_mean then 2
            else 1
        end as severity_rank,
        max_volume_reload_s_z as strength,
        'a volume reload took ' || cast(round(max_volume_reload_s, 2) as varchar) || ' s at step '
        || step || ', z ' || cast(round(max_volume_reload_s_z, 1) as varchar)
        || ' against its trailing mean '
        || cast(round(max_volume_reload_s_trailing_mean, 2) as varchar)
        || ' s' as phrase,
        [
            {'key': 'max_volume_reload_s', 'value': max_volume_reload_s},
            {'key': 'max_volume_reload_s_z', 'value': max_volume_reload_s_z},
            {'key': 'max_volume_reload_s_trailing_mean', 'value': max_volume_reload_s_trailing_mean}
        ] as measures
    from reliability
    where is_reload_spike
),

-- ---------------------------------------------------------------- model_quality_degradation

degradation_signals as (
    select
        run_id,
        'model_quality_degradation' as pattern,
        'extraction_below_min' as signal,
        step as start_step,
        step,
        2 as severity_rank,
        -value as strength,
        'extraction_rate ' || cast(round(value, 3) as varchar) || ' at step ' || step || ', below '
        || '{{ var("extraction_rate_min") }}' as phrase,
        [
            {'key': 'extraction_rate', 'value': value},
            {
                'key': 'extraction_rate_min',
                'value': cast({{ var('extraction_rate_min') }} as double)
            }
        ] as measures
    from stats
    where metric = 'extraction_rate' and value < {{ var('extraction_rate_min') }}
    union all
    select
        run_id,
        'model_quality_degradation' as pattern,
        'empty_responses_rising' as signal,
        window_first_step as start_step,
        step,
        2 as severity_rank,
        window_mean / greatest(baseline_mean, 1) as strength,
        'empty_responses averaged ' || cast(round(window_mean, 1) as varchar)
        || ' a step over steps ' || window_first_step || '-' || step || ', up from '
        || cast(round(baseline_mean, 1) as varchar)
            as phrase,
        [
            {'key': 'empty_responses_window_mean', 'value': window_mean},
            {'key': 'empty_responses_baseline_mean', 'value': baseline_mean},
            {'key': 'empty_responses_slope', 'value': window_slope}
        ] as measures
    from stats
    where metric = 'empty_responses'
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
        'reward_mean fell ' || cast(round(-reward.window_slope, 4) as varchar)
        || ' a step over steps ' || reward.window_first_step || '-' || reward.step
        || ' to a mean of ' || cast(round(reward.window_mean, 3) as varchar) || ' from '
        || cast(round(reward.baseline_mean, 3) as varchar) || ' before, while loss stayed low ('
        || cast(round(loss.window_mean, 3) as varchar) || ' against '
        || cast(round(loss.baseline_mean, 3) as varchar) || ')' as phrase,
        [
            {'key': 'reward_mean_slope', 'value': reward.window_slope},
            {'key': 'reward_mean_window_mean', 'value': reward.window_mean},
            {'key': 'reward_mean_baseline_mean', 'value': reward.baseline_mean},
            {'key': 'reward_mean_drop_z', 'value': reward.drop_z},
            {'key': 'loss_window_mean', 'value': loss.window_mean},
            {'key': 'loss_baseline_mean', 'value': loss.baseline_mean}
        ] as measures
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
    inner join stats as loss
        on reward.run_id = loss.run_id
        and reward.step = loss.step
        and loss.metric = 'loss'
    where reward.window_points = {{ window }}
        and reward.baseline_points >= {{ min_history }}
        {#- A fall right after a gradient spike is a collapse, not a drift. #}
        and not exists (
            select 1
            from grad_spikes
            where grad_spikes.run_id = reward.run_id
                and grad_spikes.spike_step
                between reward.window_first_step - {{ var('collapse_window') }} and reward.step
        )
        and reward.window_slope < -{{ var('plateau_slope_eps') }}
        and reward.drop_z > {{ spike_z }}
        {#- ... and by more than a fall at the flat-slope limit loses over a window. #}
        and reward.baseline_mean - reward.window_mean
            > {{ window }} * {{ var('plateau_slope_eps') }}
        and loss.window_points = {{ window }}
        and loss.baseline_points >= {{ min_history }}
        and loss.window_mean <= loss.baseline_mean
),

-- ---------------------------------------------------------------- power_law_scaling

power_law_signals as (
    select
        run_id,
        'power_law_scaling' as pattern,
        'power_law_fit' as signal,
        first_step as start_step,
        last_step as step,
        1 as severity_rank,
        r_squared as strength,
        'reward ~ ' || cast(round(prefactor, 5) as varchar) || ' * compute^'
        || cast(round(exponent, 3) as varchar) || ' (r_squared '
        || cast(round(r_squared, 3) as varchar) || ' over ' || n_used || ' points, '
        || n_excluded || ' non-positive excluded)' as phrase,
        [
            {'key': 'exponent', 'value': exponent},
            {'key': 'prefactor', 'value': prefactor},
            {'key': 'r_squared', 'value': r_squared},
            {'key': 'n_used', 'value': cast(n_used as double)},
            {'key': 'n_excluded', 'value': cast(n_excluded as double)},
            {'key': 'target_reward', 'value': target_reward},
            {'key': 'compute_for_target', 'value': compute_for_target}
        ] as measures
    from power_law
    where exponent is not null
),

-- ---------------------------------------------------------------- prefix_cache_inefficiency

cache_signals as (
    select
        stats.run_id,
        'prefix_cache_inefficiency' as pattern,
        'low_hit_rate' as signal,
        stats.step as start_step,
        stats.step,
        2 as severity_rank,
        -stats.value as strength,
        'cache hit rate ' || cast(round(stats.value, 3) as varchar) || ' at step ' || stats.step
        || ' after warm-up, below ' || '{{ var("cache_hit_low") }}'
        || ' (run mean after warm-up '
        || cast(round(cache_stats.hit_rate_after_warmup, 3) as varchar) || ')'
            as phrase,
        [
            {'key': 'hit_rate', 'value': stats.value},
            {'key': 'cache_hit_low', 'value': cast({{ var('cache_hit_low') }} as double)},
            {'key': 'hit_rate_after_warmup', 'value': cache_stats.hit_rate_after_warmup},
            {'key': 'avg_hit_rate', 'value': cache_stats.avg_hit_rate}
        ] as measures
    from stats
    inner join cache_stats using (run_id)
    where stats.metric = 'cache_hit_rate'
        and stats.step >= cache_stats.first_step + {{ var('cache_warmup_steps') }}
        and stats.value < {{ var('cache_hit_low') }}
    union all
    select
        run_id,
        'prefix_cache_inefficiency' as pattern,
        'cache_disabled' as signal,
        first_step as start_step,
        last_step as step,
        1 as severity_rank,
        cast(0 as double) as strength,
        'no cache/* metric over steps ' || first_step || '-' || last_step
        || ' of a run that logs the rollout families: prefix caching looks off' as phrase,
        [{'key': 'cache_data_points', 'value': cast(0 as double)}] as measures
    from cache_stats
    where not cache_enabled
),

-- ---------------------------------------------------------------- length_truncation

length_signals as (
    {# Clipped share above clip_ratio_max while it and the response length
       rise together over the window (the clipped share steadily). #}
    select
        clip.run_id,
        'length_truncation' as pattern,
        'clip_ratio_rising' as signal,
        clip.window_first_step as start_step,
        clip.step,
        2 as severity_rank,
        clip.value as strength,
        'clip_ratio reached ' || cast(round(clip.value, 3) as varchar) || ' at step ' || clip.step
        || ' (above ' || '{{ var("clip_ratio_max") }}' || '), rising '
        || cast(round(clip.window_slope, 4) as varchar) || ' a step with response_length rising '
        || cast(round(length.window_slope, 1) as varchar) || ' a step to '
        || cast(cast(round(length.value) as bigint) as varchar)
            as phrase,
        [
            {'key': 'clip_ratio', 'value': clip.value},
            {'key': 'clip_ratio_slope', 'value': clip.window_slope},
            {'key': 'clip_ratio_max', 'value': cast({{ var('clip_ratio_max') }} as double)},
            {'key': 'response_length', 'value': length.value},
            {'key': 'response_length_slope', 'value': length.window_slope}
        ] as measures
    from stats as clip
    inner join stats as length
        on clip.run_id = length.run_id
        and clip.step = length.step
        and length.metric = 'response_length'
    where clip.metric = 'clip_ratio'
        and clip.value > {{ var('clip_ratio_max') }}
        and clip.window_points = {{ window }}
        and clip.window_slope > 0
        and clip.window_r2 >= {{ var('rising_min_r2') }}
        and length.window_points = {{ window }}
        and length.window_slope > 0
),

-- ---------------------------------------------------------------- entropy_collapse_plateau

entropy_early as (
    select
        run_id,
        avg(value) as early_entropy
    from stats
    where metric = 'entropy' and n <= {{ window }}
    group by run_id
    having count(*) = {{ window }}
),

entropy_collapse as (
    {# The first point after the early window below the fraction of it. #}
    select
        stats.run_id,
        stats.step as collapse_step,
        stats.value as collapse_entropy,
        entropy_early.early_entropy
    from stats
    inner join entropy_early using (run_id)
    where stats.metric = 'entropy'
        and stats.n > {{ window }}
        and stats.value < {{ var('entropy_collapse_fraction') }} * entropy_early.early_entropy
    qualify row_number() over (partition by stats.run_id order by stats.step) = 1
),

entropy_signals as (
    {# The collapse, when a reward plateau window ends at or after it. #}
    select
        entropy_collapse.run_id,
        'entropy_collapse_plateau' as pattern,
        'entropy_collapse' as signal,
        entropy_collapse.collapse_step as start_step,
        max(plateau.step) as step,
        case when count(*) >= {{ var('plateau_min_windows') }} then 2 else 1 end as severity_rank,
        -any_value(entropy_collapse.collapse_entropy) as strength,
        'entropy fell to '
        || cast(round(any_value(entropy_collapse.collapse_entropy), 3) as varchar)
        || ' at step ' || entropy_collapse.collapse_step || ' (under '
        || '{{ var("entropy_collapse_fraction") }}' || ' of its early '
        || cast(round(any_value(entropy_collapse.early_entropy), 3) as varchar)
        || '), then reward_mean stopped improving (flat from step '
        || min(plateau.window_first_step) || ')' as phrase,
        [
            {'key': 'early_entropy', 'value': any_value(entropy_collapse.early_entropy)},
            {'key': 'collapse_entropy', 'value': any_value(entropy_collapse.collapse_entropy)},
            {
                'key': 'entropy_fraction',
                'value': any_value(entropy_collapse.collapse_entropy)
                    / any_value(entropy_collapse.early_entropy)
            },
            {'key': 'plateau_first_step', 'value': cast(min(plateau.window_first_step) as double)},
            {
                'key': 'reward_mean_slope',
                'value': arg_min(plateau.window_slope, abs(plateau.window_slope))
            }
        ] as measures
    from entropy_collapse
    inner join plateau_windows as plateau
        on entropy_collapse.run_id = plateau.run_id
        and plateau.metric = 'reward_mean'
        and plateau.step >= entropy_collapse.collapse_step
    group by entropy_collapse.run_id, entropy_collapse.collapse_step
),

-- ---------------------------------------------------------------- kl_runaway

kl_signals as (
    select
        run_id,
        'kl_runaway' as pattern,
        'kl_above_max' as signal,
        step as start_step,
        step,
        case when value > 2 * {{ var('kl_max') }} then 3 else 2 end as severity_rank,
        value as strength,
        'kl reached ' || cast(round(value, 3) as varchar) || ' at step ' || step || ' (limit '
        || '{{ var("kl_max") }}' || ')' as phrase,
        [
            {'key': 'kl', 'value': value},
            {'key': 'kl_max', 'value': cast({{ var('kl_max') }} as double)}
        ] as measures
    from stats
    where metric = 'kl' and value > {{ var('kl_max') }}
    union all
    select
        run_id,
        'kl_runaway' as pattern,
        'kl_rising' as signal,
        window_first_step as start_step,
        step,
        2 as severity_rank,
        window_slope as strength,
        'kl rose steadily ' || cast(round(window_slope, 4) as varchar) || ' a step over steps '
        || window_first_step || '-' || step || ' to ' || cast(round(value, 3) as varchar)
        || ', on course for ' || '{{ var("kl_max") }}' || ' within '
        || '{{ var("kl_projection_steps") }}' || ' steps' as phrase,
        [
            {'key': 'kl', 'value': value},
            {'key': 'kl_slope', 'value': window_slope},
            {'key': 'kl_r_squared', 'value': window_r2},
            {
                'key': 'kl_projected',
                'value': value + window_slope * {{ var('kl_projection_steps') }}
            }
        ] as measures
    from stats
    where metric = 'kl'
        and value <= {{ var('kl_max') }}
        and window_points = {{ window }}
        and window_slope > 0
        and window_r2 >= {{ var('rising_min_r2') }}
        and value + window_slope * {{ var('kl_projection_steps') }} >= {{ var('kl_max') }}
),

-- ---------------------------------------------------------------- episodes

signals as (
    select * from instability_spikes
    union all select * from instability_non_finite
    union all select * from collapse_signals
    union all select * from plateau_signals
    union all select * from infrastructure_signals
    union all select * from degradation_signals
    union all select * from power_law_signals
    union all select * from cache_signals
    union all select * from length_signals
    union all select * from entropy_signals
    union all select * from kl_signals
),

reach as (
    {# Gaps and islands: a signal starts a new episode when it begins more
       than finding_episode_gap steps after everything before it ended. #}
    select
        *,
        max(step) over (
            partition by run_id, pattern order by start_step, step, signal
            rows between unbounded preceding and 1 preceding
        ) as reached_before
    from signals
),

episodes as (
    select
        *,
        sum(
            case
                when reached_before is null
                    or start_step > reached_before + {{ var('finding_episode_gap') }}
                    then 1
                else 0
            end
        ) over (
            partition by run_id, pattern order by start_step, step, signal
            rows between unbounded preceding and current row
        ) as episode
    from reach
),

signal_counts as (
    select
        run_id,
        pattern,
        episode,
        signal,
        min(start_step) as signal_first_step,
        count(distinct step) as signal_steps
    from episodes
    group by run_id, pattern, episode, signal
),

representatives as (
    {# Each signal's strongest point (a plateau's first window) stands for it
       in the evidence and the sentence. #}
    select
        episodes.*,
        signal_counts.signal_first_step,
        signal_counts.signal_steps
    from episodes
    inner join signal_counts using (run_id, pattern, episode, signal)
    qualify row_number() over (
        partition by episodes.run_id, episodes.pattern, episodes.episode, episodes.signal
        order by episodes.strength desc nulls last, episodes.step
    ) = 1
),

measures as (
    select
        run_id,
        pattern,
        episode,
        measure.key,
        measure.value
    from (
        select run_id, pattern, episode, unnest(measures) as measure
        from representatives
    )
    union all
    select
        run_id,
        pattern,
        episode,
        signal || '_steps' as key,
        cast(signal_steps as double) as value
    from representatives
),

evidence as (
    select
        run_id,
        pattern,
        episode,
        to_json(map(list(key order by key), list(value order by key))) as evidence
    from (
        {#- Evidence is for reading: 8 significant digits (the full numbers are
            in the marts each finding reads), which also keeps it the same
            whatever order a parallel sum added in. -#}
        select
            run_id,
            pattern,
            episode,
            key,
            case
                when max(value) = 0 then 0.0
                else round(max(value), 7 - cast(floor(log10(abs(max(value)))) as integer))
            end as value
        from measures
        where value is not null and isfinite(value)
        group by run_id, pattern, episode, key
    )
    group by run_id, pattern, episode
),

described as (
    select
        run_id,
        pattern,
        episode,
        string_agg(
            phrase || case
                when signal_steps > 1 then ' (' || signal_steps || ' flagged steps)'
                else ''
            end,
            '; ' order by signal_first_step, signal
        ) as details,
        list(signal order by signal_first_step, signal) as signals
    from representatives
    group by run_id, pattern, episode
),

run_lengths as (
    {#- A lone excursion is reported only when a run this long would not be
        expected to show one by chance. The largest of n standard normal
        draws is about sqrt(2 ln n); a run has six series scored this way
        (loss, grad norm, reward swings, extraction, two timings), and z
        against a 20-point trailing window has heavier tails than a normal's
        (hence 15% more): 4.3 at 200 steps, 5.0 at 2,000, 5.5 at 20,000. -#}
    select
        run_id,
        greatest(
            {{ spike_z }},
            1.15 * sqrt(2 * ln(6 * greatest(count(distinct step), 2)))
        ) as excursion_z
    from history
    group by run_id
),

rolled_up as (
    select
        run_id,
        pattern,
        episode,
        min(start_step) as first_step,
        max(step) as last_step,
        count(distinct step) as flagged_steps,
        {#- A plateau is a warning once enough of its windows were flat: a
            stretch shorter than that is what noise gives on a slowly rising
            reward. #}
        case
            when pattern = 'performance_plateau'
                and count(distinct step) filter (where signal not like '%\_recent' escape '\')
                < {{ var('plateau_min_windows') }} then 1
            {#- Repeated loss or gradient spikes within one episode are a
                warning even when none alone passes spike_z_warning. #}
            {#- (and one of them beyond what noise gives a run this long) -#}
            when pattern = 'training_instability'
                and count(distinct step) filter (
                    where signal in ('loss_spike', 'grad_norm_spike')
                ) >= {{ var('instability_min_spikes') }}
                and max(strength) > any_value(excursion_z)
                then greatest(max(severity_rank), 2)
            else max(severity_rank)
        end as severity_rank,
        max(strength) as strength,
        bool_and(signal like '%\_spike' escape '\' or signal in ('reward_swing', 'extraction_drop'))
            as only_excursions
    from episodes
    left join run_lengths using (run_id)
    group by run_id, pattern, episode
),

reported as (
    select rolled_up.*
    from rolled_up
    left join run_lengths using (run_id)
    where not (
        rolled_up.severity_rank = 1
        and rolled_up.only_excursions
        and rolled_up.strength <= run_lengths.excursion_z
    )
),

pattern_hypotheses as (
    select
        pattern,
        list(hypothesis order by position) as hypotheses
    from hypotheses
    group by pattern
),

labels as (
    select * from (
        values
            ('training_instability', 'Training instability'),
            ('performance_plateau', 'Performance plateau'),
            ('infrastructure_bottleneck', 'Infrastructure bottleneck'),
            ('model_quality_degradation', 'Model quality degradation'),
            ('power_law_scaling', 'Power-law scaling'),
            ('prefix_cache_inefficiency', 'Prefix cache inefficiency'),
            ('grad_spike_reward_collapse', 'Gradient spike then reward collapse'),
            ('length_truncation', 'Length truncation'),
            ('entropy_collapse_plateau', 'Entropy collapse then plateau'),
            ('kl_runaway', 'KL runaway')
    ) as labels (pattern, label)
),

final as (
    select
        reported.run_id,
        reported.pattern,
        case reported.severity_rank
            when 3 then 'critical'
            when 2 then 'warning'
            else 'info'
        end as severity,
        reported.first_step,
        reported.last_step,
        reported.flagged_steps,
        described.signals,
        json_merge_patch(
            json_object('flagged_steps', reported.flagged_steps),
            coalesce(evidence.evidence, json_object())
        ) as evidence,
        coalesce(pattern_hypotheses.hypotheses, []::varchar[]) as hypotheses,
        labels.label || case
            when reported.first_step = reported.last_step
                then ' at step ' || reported.first_step
            else ' at steps ' || reported.first_step || '-' || reported.last_step
        end || ': ' || described.details || '.' as summary
    from reported
    inner join described using (run_id, pattern, episode)
    left join evidence using (run_id, pattern, episode)
    left join pattern_hypotheses using (pattern)
    left join labels using (pattern)
)

select * from final
