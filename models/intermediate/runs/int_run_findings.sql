{{
    config(
        materialized='incremental',
        unique_key=['run_id'],
    )
}}
{# What went wrong in a run, and when, as rows a person can act on: each rule
   turns steps into flagged points (signals), signals of one pattern closer
   than `finding_episode_gap` steps make one episode, and each episode gets a
   severity, its evidence as numbers, the hypotheses of the
   `finding_hypotheses` seed and one sentence saying what was seen.

   Every rule measures a change against the series' own noise, so a healthy
   run with the noise real GRPO runs have (a batch mean of pass/fail rewards
   moves about 0.06 from step to step; gradient norms are lognormal with
   heavy tails; GRPO's loss is mostly 0) raises no warning. Each point's z
   against its trailing median and its series' noise comes from
   int_metric_scores (fct_rollout_reliability reads the same). A lone
   excursion beyond what noise gives a run this long is `info`; a warning
   needs a cluster of excursions that the run's own excursion rate makes
   unlikely, a lone one far beyond chance, a failure, or a sustained change
   measured against the noise.
   A run without the metrics a rule reads gets no finding from it.

   Built by run: a build judges again only the runs that received points
   since the last one (macro changed_runs), and every run judged leaves one
   row with a null pattern, whose `run_parts` tells the next build how far
   it was judged (a run with no finding would otherwise be judged again at
   every build). fct_run_findings is this table without those
   rows. #}
{%- set spike_z = var('spike_z') -%}
{%- set spike_z_warning = var('spike_z_warning') -%}
{%- set spike_window = var('spike_window') -%}
{%- set min_history = var('spike_min_history') -%}
{%- set window = var('plateau_window') -%}
{%- set excursion_signals -%}
    'loss_spike', 'grad_norm_spike', 'reward_swing', 'extraction_drop',
    'max_total_s_spike', 'max_volume_reload_s_spike'
{%- endset -%}
with

changed_history as (
    {{ changed_runs(ref('int_metric_history'), ref('int_metric_history')) }}
),

judged_runs as (
    select
        run_id,
        max(run_parts) as run_parts
    from changed_history
    group by 1
),

history as (
    select * from changed_history
    where canonical_metric in {{ judged_metrics() }}
),

reliability as (
    select * from {{ ref('int_rollout_reliability') }}
    where run_id in (select judged_runs.run_id from judged_runs)
),

cache_stats as (
    select * from {{ ref('int_cache_stats') }}
    where run_id in (select judged_runs.run_id from judged_runs)
),

power_law as (
    select * from {{ ref('int_power_law_fit') }}
    where
        scope = 'run'
        and run_id in (select judged_runs.run_id from judged_runs)
),

hypotheses as (
    select * from {{ ref('finding_hypotheses') }}
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
        ) as excursion_z,
        count(distinct step) as steps
    from history
    group by 1
),


-- ---------------------------------------------------------------- series

scores as (
    {# Every judged point with its residual, noise scale and z
       (int_metric_scores, where the scoring is described). #}
    {{ changed_runs(ref('int_metric_scores'), ref('int_metric_scores')) }}
),

numbered as (
    select
        run_id,
        metric,
        step,
        n,
        value
    from scores
),

baselines as (
    {# Per point, the `spike_window` points before its own plateau window
       (a baseline level). #}
    select
        run_id,
        metric,
        n,
        avg(value) over baseline as baseline_mean,
        stddev_samp(value) over baseline as baseline_std,
        count(*) over baseline as baseline_points
    from numbered
    window baseline as (
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
        avg(member.value) as window_mean
    from numbered as point
    cross join (
        {#- An equality join on each offset, so the cost grows with the points
            times the window, not with the points squared. #}
        values ({{ range(window) | join('), (') }})
    ) as offsets (back)
    inner join numbered as member
        on
            point.run_id = member.run_id
            and point.metric = member.metric
            and member.n = point.n - offsets.back
    where
        point.metric in (
            'reward_mean', 'loss', 'empty_responses', 'kl', 'clip_ratio', 'response_length'
        )
    group by 1, 2, 3
),

stats as (
    select
        scores.run_id,
        scores.metric,
        scores.step,
        scores.n,
        scores.value,
        scores.trailing_median,
        scores.trailing_points,
        scores.residual,
        scores.noise_scale,
        scores.z,
        baselines.baseline_mean,
        baselines.baseline_std,
        baselines.baseline_points,
        windows.window_first_step,
        windows.window_points,
        windows.window_slope,
        windows.window_r2,
        windows.window_mean
    from scores
    inner join baselines using (run_id, metric, n)
    left join windows using (run_id, metric, n)
),

-- ---------------------------------------------------------------- training_instability

instability_spikes as (
    {# Loss or gradient-norm spikes, swings of the reward, sudden drops of
       the extraction rate: excursions, judged together in `rolled_up`. #}
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
        1 as severity_rank,
        abs(z) as strength,
        case metric
            when 'reward_mean_change'
                then
                    'reward_mean moved by ' || cast(round(value, 3) as varchar)
                    || ' at step ' || step
                    || ', z ' || cast(round(z, 1) as varchar) || ' against its step-to-step changes'
            when 'extraction_rate'
                then
                    'extraction_rate fell to ' || cast(round(value, 3) as varchar)
                    || ' at step ' || step
                    || ', z ' || cast(round(z, 1) as varchar) || ' below its trailing median '
                    || cast(round(trailing_median, 3) as varchar)
            else
                metric || ' reached ' || cast(round(value, 3) as varchar) || ' at step ' || step
                || ', z ' || cast(round(z, 1) as varchar) || ' above its trailing median '
                || cast(round(trailing_median, 3) as varchar)
        end as phrase,
        [
            { 'key': metric, 'value': value },
            { 'key': metric || '_z', 'value': z },
            { 'key': metric || '_trailing_median', 'value': trailing_median }
        ] as measures
    from (
        select
            *,
            lag(z) over (partition by run_id, metric order by n) as previous_z
        from stats
    ) as with_previous_z
    where
        (metric in ('loss', 'grad_norm') and z > {{ spike_z }})
        or (
            metric = 'reward_mean_change' and abs(z) > {{ spike_z }}
            {# One odd batch moves the reward away and back: the way back is
               the same excursion. #}
            and not coalesce(abs(previous_z) > {{ spike_z }} and sign(previous_z) != sign(z), false)
        )
        or (metric = 'extraction_rate' and z < -{{ spike_z }})
),

instability_non_finite as (
    {# A NaN or infinite loss, gradient norm, reward, KL or entropy: the run
       diverged (or its logging broke) there. #}
    select
        run_id,
        'training_instability' as pattern,
        canonical_metric || '_non_finite' as signal,
        step as start_step,
        step,
        3 as severity_rank,
        cast(1e9 as double) as strength,
        canonical_metric || ' was ' || cast(value as varchar) || ' at step ' || step as phrase,
        [{ 'key': canonical_metric || '_non_finite_step', 'value': cast(step as double) }]
            as measures
    from history
    where
        canonical_metric in ('loss', 'grad_norm', 'reward_mean', 'kl', 'entropy')
        and not isfinite(value)
),

-- ---------------------------------------------------------------- grad_spike_reward_collapse

grad_spikes as (
    select
        run_id,
        step as spike_step,
        value as grad_norm,
        z as grad_z,
        trailing_median as grad_trailing_median
    from stats
    where metric = 'grad_norm' and z > {{ spike_z }}
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

reward_before_spike as (
    {# The reward's level just before the spike: the trailing median of the
       first reward point at or after it (which holds only earlier points). #}
    select
        grad_spikes.*,
        reward.trailing_median as reward_before,
        reward.noise_scale as reward_noise,
        reward.trailing_points as reward_points_before
    from grad_spikes
    inner join stats as reward
        on
            grad_spikes.run_id = reward.run_id
            and reward.metric = 'reward_mean'
            and grad_spikes.spike_step <= reward.step
    qualify row_number() over (
        partition by grad_spikes.run_id, grad_spikes.spike_step order by reward.step
    ) = 1
),

collapsed_points as (
    select
        reward_before_spike.*,
        moving.step as reward_step,
        moving.run_mean as reward,
        (reward_before_spike.reward_before - moving.run_mean) / (
            reward_before_spike.reward_noise
            * sqrt(1.0 / moving.run_points + 1.0 / {{ spike_window }})
        ) as drop_z
    from reward_before_spike
    inner join run_lengths on reward_before_spike.run_id = run_lengths.run_id
    inner join reward_moving as moving
        on
            reward_before_spike.run_id = moving.run_id
            and moving.step between reward_before_spike.spike_step
            and reward_before_spike.spike_step + {{ var('collapse_window') }}
    where
        reward_before_spike.reward_points_before >= {{ min_history }}
        and moving.run_points = {{ var('collapse_min_points') }}
        and moving.run_mean <= (
            reward_before_spike.reward_before
            - {{ var('collapse_drop_fraction') }} * abs(reward_before_spike.reward_before)
        )
        {# Every spike's window is searched: beyond what noise gives a run
           this long, not just spike_z. #}
        and (reward_before_spike.reward_before - moving.run_mean) > run_lengths.excursion_z * (
            reward_before_spike.reward_noise
            * sqrt(1.0 / moving.run_points + 1.0 / {{ spike_window }})
        )
),

collapses as (
    select
        run_id,
        spike_step,
        any_value(grad_norm) as grad_norm,
        any_value(grad_z) as grad_z,
        any_value(grad_trailing_median) as grad_trailing_median,
        any_value(reward_before) as reward_before,
        min(reward) as reward_min,
        arg_min(reward_step, reward) as collapse_step,
        max(drop_z) as drop_z
    from collapsed_points
    group by 1, 2
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
        || ', z ' || cast(round(grad_z, 1) as varchar) || ' above its trailing median '
        || cast(round(grad_trailing_median, 3) as varchar) as phrase,
        [
            { 'key': 'grad_norm', 'value': grad_norm },
            { 'key': 'grad_norm_z', 'value': grad_z },
            { 'key': 'spike_step', 'value': cast(spike_step as double) }
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
        drop_z as strength,
        'then reward_mean averaged ' || cast(round(reward_min, 3) as varchar)
        || ' over the {{ var("collapse_min_points") }} points from step ' || collapse_step || ', '
        || cast(
            cast(
                round(100 * (reward_before - reward_min) / nullif(abs(reward_before), 0))
                as bigint
            ) as varchar
        )
        || '% below its trailing median ' || cast(round(reward_before, 3) as varchar)
        || ' (z ' || cast(round(drop_z, 1) as varchar) || ')' as phrase,
        [
            { 'key': 'reward_before', 'value': reward_before },
            { 'key': 'reward_min', 'value': reward_min },
            {
                'key': 'drop_fraction',
                'value': (reward_before - reward_min) / nullif(abs(reward_before), 0)
            },
            { 'key': 'reward_drop_z', 'value': drop_z },
            { 'key': 'collapse_step', 'value': cast(collapse_step as double) },
            { 'key': 'steps_to_collapse', 'value': cast(collapse_step - spike_step as double) }
        ] as measures
    from collapses
),

-- ---------------------------------------------------------------- performance_plateau

trend_series as (
    {# reward_mean and Elo, with what a plateau is measured against: the
       series' spread (its 95th minus 5th percentile) and how many points a
       stretch needs before it is judged (`plateau_horizon_fraction` of the
       series, at least `plateau_window`). #}
    select
        numbered.run_id,
        numbered.metric,
        numbered.step,
        numbered.n,
        numbered.value,
        max(numbered.value) over whole as series_max,
        quantile_cont(numbered.value, 0.95) over whole
        - quantile_cont(numbered.value, 0.05) over whole as spread,
        greatest(
            {{ window }},
            cast(round({{ var('plateau_horizon_fraction') }} * count(*) over whole) as integer)
        ) as horizon,
        max(numbered.step) over whole as last_step,
        min(numbered.step) over whole as first_step,
        median(numbered.value) filter (where numbered.n <= {{ spike_window }}) over whole
            as first_level
    from numbered
    where numbered.metric in ('reward_mean', 'elo')
    window whole as (partition by numbered.run_id, numbered.metric)
),

rest_of_series as (
    {# From each point to the series' end: the least-squares trend a step,
       its standard error, and the share of points at the series' maximum. #}
    select
        *,
        regr_count(value, step) over rest as rest_points,
        regr_slope(value, step) over rest as rest_slope,
        regr_sxx(value, step) over rest as rest_sxx,
        regr_syy(value, step) over rest as rest_syy,
        regr_sxy(value, step) over rest as rest_sxy,
        avg(value) over rest as rest_mean,
        avg(case when value = series_max then 1.0 else 0.0 end) over rest as rest_at_max,
        {#- For placing the plateau's start (see plateau_signals): sums
            for a hinge y = a + b min(step, c) at c = this step, over the
            whole series (x = step before c, c from it on). -#}
        coalesce(sum(step) over before, 0) + step * count(*) over rest as hinge_sx,
        coalesce(sum(step * step) over before, 0) + step * step * count(*) over rest
            as hinge_sxx,
        coalesce(sum(step * value) over before, 0) + step * sum(value) over rest as hinge_sxy,
        count(*) over whole_series as series_points,
        sum(value) over whole_series as series_sy,
        sum(value * value) over whole_series as series_syy
    from trend_series
    window
        rest as (
            partition by run_id, metric order by n
            rows between current row and unbounded following
        ),
        before as (
            partition by run_id, metric order by n
            rows between unbounded preceding and 1 preceding
        ),
        whole_series as (partition by run_id, metric)
),

levels as (
    select
        run_id,
        metric,
        step,
        trailing_median as level,
        noise_scale
    from stats
),

flat_stretches as (
    {#- A point starts a flat stretch when, from it to the series' end (at
        least `horizon` points), the reward's trend is below the flat-slope
        limit, and even its upper bound (slope + 2 standard errors) gains
        less than `plateau_min_gain` of the series' spread by the end. A
        reward that still rises slowly over a long run is not flat: over
        hundreds of points the standard error is small. -#}
    select
        rest_of_series.*,
        levels.level,
        levels.noise_scale,
        sqrt(
            greatest(
                rest_of_series.rest_syy - rest_of_series.rest_slope * rest_of_series.rest_sxy, 0
            )
            / (rest_of_series.rest_points - 2)
            / rest_of_series.rest_sxx
        ) as rest_slope_se,
        {#- From the median of the first spike_window points to the median
            of the spike_window points before this one (two separate
            windows, so not before 2 x spike_window points). #}
        case
            when rest_of_series.n > 2 * {{ spike_window }}
                then
                    (levels.level - rest_of_series.first_level)
                    / nullif(step - rest_of_series.first_step, 0)
        end as pace_before,
        {#- Did it rise before? The two medians differ by more than trend_z
            standard errors (a median of w points: about 1.25 sd / sqrt(w)). #}
        coalesce(
            rest_of_series.n > 2 * {{ spike_window }}
            and levels.level - rest_of_series.first_level
            > {{ var('trend_z') }} * 1.25 * levels.noise_scale * sqrt(2.0 / {{ spike_window }}),
            false
        ) as rose_before
    from rest_of_series
    inner join levels using (run_id, metric, step)
    where
        rest_of_series.rest_points >= greatest(rest_of_series.horizon, 3)
        and rest_of_series.rest_sxx > 0
),

plateau_points as (
    select
        *,
        (rest_slope + {{ var('trend_z') }} * rest_slope_se) * (last_step - step) as gain_upper,
        metric = 'reward_mean' and rest_at_max >= {{ var('saturation_share') }} as saturated
    from flat_stretches
    where rest_slope < case metric
        when 'reward_mean' then {{ var('plateau_slope_eps') }}
        else {{ var('elo_plateau_slope_eps') }}
    end
    and case
        {#- slower than a fifth of its pace so far, after a rise ... #}
        when rose_before
            then
                rest_slope + {{ var('trend_z') }} * rest_slope_se
                < {{ var('plateau_pace_fraction') }} * pace_before
            {#- ... or, without one, gaining less than a twentieth of its
                spread by the end #}
        else
            (rest_slope + {{ var('trend_z') }} * rest_slope_se) * (last_step - step)
            < {{ var('plateau_min_gain') }} * spread
    end
),

plateau_signals as (
    {#- One episode per series, from where the reward stopped improving to
        the series' end. Of the points that start a flat stretch, the start
        is the one where a line that rises up to it and stays level from it
        on (a hinge) fits the whole series best (least squared error). The
        first flat point is often too early: the stretch from it is flat
        only on average. -#}
    select
        run_id,
        case when saturated then 'reward_saturation' else 'performance_plateau' end as pattern,
        case
            when saturated then metric || '_at_max'
            when metric = 'reward_mean' then 'reward_plateau'
            else 'elo_plateau'
        end as signal,
        step as start_step,
        last_step as step,
        2 as severity_rank,
        cast(flat_points as double) as strength,
        case
            when saturated
                then
                    metric || ' sat at its maximum ' || cast(round(series_max, 3) as varchar)
                    || ' on ' || cast(cast(round(100 * rest_at_max) as bigint) as varchar)
                    || '% of the points from step ' || step || ' to ' || last_step
            else
                metric || ' stopped improving at step ' || step || ': to step ' || last_step
                || ' its trend was ' || cast(round(rest_slope, 6) + 0.0 as varchar)
                || ' a step (mean ' || cast(round(rest_mean, 3) as varchar)
                || '), at most ' || cast(round(gain_upper, 4) + 0.0 as varchar)
                || ' gained by the end within {{ var('trend_z') }} standard errors'
                || coalesce(
                    ' (its pace before: ' || cast(round(pace_before, 6) + 0.0 as varchar)
                    || ' a step)',
                    ''
                )
        end
        || ' (' || flat_points || ' flat starting points)' as phrase,
        [
            { 'key': metric || '_slope', 'value': rest_slope },
            { 'key': metric || '_slope_se', 'value': rest_slope_se },
            { 'key': metric || '_mean_after', 'value': rest_mean },
            { 'key': metric || '_gain_upper', 'value': gain_upper },
            { 'key': metric || '_spread', 'value': spread },
            { 'key': metric || '_pace_before', 'value': pace_before },
            { 'key': metric || '_share_at_max', 'value': rest_at_max },
            { 'key': metric || '_flat_points', 'value': cast(flat_points as double) }
        ] as measures
    from (
        select
            *,
            count(*) over (partition by run_id, metric, saturated) as flat_points
        from plateau_points
    ) as with_flat_points
    qualify row_number() over (
        partition by run_id, metric, saturated
        order by
            {#- the hinge's squared error: Syy - Sxy^2 / Sxx (centred sums) #}
            (series_syy - series_sy * series_sy / series_points)
            - power(hinge_sxy - hinge_sx * series_sy / series_points, 2)
            / nullif(hinge_sxx - hinge_sx * hinge_sx / series_points, 0) nulls last,
            step
    ) = 1
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
        [{ 'key': 'failed_rollouts', 'value': failed_rollouts }] as measures
    from reliability
    where is_failure
    union all
    {# The slowest game's and the slowest volume reload's time, in log
        space against their own noise (excursions, judged in `rolled_up`);
        a lone one is a warning only when also spike_min_ratio x its
        trailing median. #}
    select
        run_id,
        'infrastructure_bottleneck' as pattern,
        metric || '_spike' as signal,
        step as start_step,
        step,
        1 as severity_rank,
        z as strength,
        case metric
            when 'max_total_s' then 'the slowest game took '
            else 'a volume reload took '
        end
        || cast(round(value, 2) as varchar) || ' s at step ' || step
        || ', z ' || cast(round(z, 1) as varchar) || ', '
        || cast(round(value / trailing_median, 1) as varchar) || 'x its trailing median '
        || cast(round(trailing_median, 2) as varchar) || ' s' as phrase,
        [
            { 'key': metric, 'value': value },
            { 'key': metric || '_z', 'value': z },
            { 'key': metric || '_ratio', 'value': value / trailing_median },
            { 'key': metric || '_trailing_median', 'value': trailing_median }
        ] as measures
    from stats
    where metric in ('max_total_s', 'max_volume_reload_s') and z > {{ spike_z }}
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
            { 'key': 'extraction_rate', 'value': value },
            {
                'key': 'extraction_rate_min',
                'value': cast({{ var('extraction_rate_min') }} as double)
            }
        ] as measures
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
        'empty_responses averaged ' || cast(round(window_mean, 1) as varchar)
        || ' a step over steps ' || window_first_step || '-' || step || ', up from '
        || cast(round(baseline_mean, 1) as varchar)
            as phrase,
        [
            { 'key': 'empty_responses_window_mean', 'value': window_mean },
            { 'key': 'empty_responses_baseline_mean', 'value': baseline_mean },
            { 'key': 'empty_responses_slope', 'value': window_slope }
        ] as measures
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
        'reward_mean fell ' || cast(round(-reward.window_slope, 4) as varchar)
        || ' a step over steps ' || reward.window_first_step || '-' || reward.step
        || ' to a mean of ' || cast(round(reward.window_mean, 3) as varchar) || ' from '
        || cast(round(reward.baseline_mean, 3) as varchar) || ' before'
        || case
            when loss.step is not null
                then
                    ', while loss stayed low (' || cast(round(loss.window_mean, 3) as varchar)
                    || ' against ' || cast(round(loss.baseline_mean, 3) as varchar) || ')'
            else ' (no loss logged)'
        end as phrase,
        [
            { 'key': 'reward_mean_slope', 'value': reward.window_slope },
            { 'key': 'reward_mean_window_mean', 'value': reward.window_mean },
            { 'key': 'reward_mean_baseline_mean', 'value': reward.baseline_mean },
            { 'key': 'reward_mean_drop_z', 'value': reward.drop_z },
            { 'key': 'loss_window_mean', 'value': loss.window_mean },
            { 'key': 'loss_baseline_mean', 'value': loss.baseline_mean }
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
    inner join run_lengths on reward.run_id = run_lengths.run_id
    {#- Where a loss is logged it must not have risen (the analysis's "despite
        low loss"); a run without one is judged on its reward alone. #}
    left join stats as loss
        on
            reward.run_id = loss.run_id
            and reward.step = loss.step
            and loss.metric = 'loss'
            and loss.window_points = {{ window }}
            and loss.baseline_points >= {{ min_history }}
    {#- A fall right after a gradient spike is a collapse, not a drift. #}
    anti join grad_spikes
        on
            reward.run_id = grad_spikes.run_id
            and grad_spikes.spike_step
            between reward.window_first_step - {{ var('collapse_window') }} and reward.step
    where
        reward.window_points = {{ window }}
        and reward.baseline_points >= {{ min_history }}
        and reward.window_slope < -{{ var('plateau_slope_eps') }}
        {#- Judged at every point, so beyond what noise gives a run this long. #}
        and reward.drop_z > run_lengths.excursion_z
        {#- ... and by more than a fall at the flat-slope limit loses over a window. #}
        and reward.baseline_mean - reward.window_mean > (
            {{ window }} * {{ var('plateau_slope_eps') }}
        )
        and (loss.step is null or loss.window_mean <= loss.baseline_mean)
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
            { 'key': 'exponent', 'value': exponent },
            { 'key': 'prefactor', 'value': prefactor },
            { 'key': 'r_squared', 'value': r_squared },
            { 'key': 'n_used', 'value': cast(n_used as double) },
            { 'key': 'n_excluded', 'value': cast(n_excluded as double) },
            { 'key': 'target_reward', 'value': target_reward },
            { 'key': 'compute_for_target', 'value': compute_for_target }
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
            { 'key': 'hit_rate', 'value': stats.value },
            { 'key': 'cache_hit_low', 'value': cast({{ var('cache_hit_low') }} as double) },
            { 'key': 'hit_rate_after_warmup', 'value': cache_stats.hit_rate_after_warmup },
            { 'key': 'avg_hit_rate', 'value': cache_stats.avg_hit_rate }
        ] as measures
    from stats
    inner join cache_stats using (run_id)
    where
        stats.metric = 'cache_hit_rate'
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
        [{ 'key': 'cache_data_points', 'value': cast(0 as double) }] as measures
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
            { 'key': 'clip_ratio', 'value': clip.value },
            { 'key': 'clip_ratio_slope', 'value': clip.window_slope },
            { 'key': 'clip_ratio_max', 'value': cast({{ var('clip_ratio_max') }} as double) },
            { 'key': 'response_length', 'value': length.value },
            { 'key': 'response_length_slope', 'value': length.window_slope }
        ] as measures
    from stats as clip
    inner join stats as length
        on
            clip.run_id = length.run_id
            and clip.step = length.step
            and length.metric = 'response_length'
    where
        clip.metric = 'clip_ratio'
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
    group by 1
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
    where
        stats.metric = 'entropy'
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
        || min(plateau.step) || ')' as phrase,
        [
            { 'key': 'early_entropy', 'value': any_value(entropy_collapse.early_entropy) },
            { 'key': 'collapse_entropy', 'value': any_value(entropy_collapse.collapse_entropy) },
            {
                'key': 'entropy_fraction',
                'value': any_value(entropy_collapse.collapse_entropy)
                / any_value(entropy_collapse.early_entropy)
            },
            { 'key': 'plateau_first_step', 'value': cast(min(plateau.step) as double) },
            {
                'key': 'reward_mean_slope',
                'value': arg_min(plateau.rest_slope, plateau.step)
            }
        ] as measures
    from entropy_collapse
    inner join plateau_points as plateau
        on
            entropy_collapse.run_id = plateau.run_id
            and plateau.metric = 'reward_mean'
            and not plateau.saturated
            and entropy_collapse.collapse_step <= plateau.step
    group by 1, 4
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
            { 'key': 'kl', 'value': value },
            { 'key': 'kl_max', 'value': cast({{ var('kl_max') }} as double) }
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
            { 'key': 'kl', 'value': value },
            { 'key': 'kl_slope', 'value': window_slope },
            { 'key': 'kl_r_squared', 'value': window_r2 },
            {
                'key': 'kl_projected',
                'value': value + window_slope * {{ var('kl_projection_steps') }}
            }
        ] as measures
    from stats
    where
        metric = 'kl'
        and value <= {{ var('kl_max') }}
        and window_points = {{ window }}
        and window_slope > 0
        and window_r2 >= {{ var('rising_min_r2') }}
        and value + window_slope * {{ var('kl_projection_steps') }} >= {{ var('kl_max') }}
),

-- ---------------------------------------------------------------- episodes

signals as (
    select * from instability_spikes
    union all
    select * from instability_non_finite
    union all
    select * from collapse_signals
    union all
    select * from plateau_signals
    union all
    select * from infrastructure_signals
    union all
    select * from degradation_signals
    union all
    select * from power_law_signals
    union all
    select * from cache_signals
    union all
    select * from length_signals
    union all
    select * from entropy_signals
    union all
    select * from kl_signals
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
                when
                    reached_before is null
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
    group by 1, 2, 3, 4
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
        order by episodes.strength desc nulls last, episodes.step asc
    ) = 1
),

measures as (
    select
        unnested.run_id,
        unnested.pattern,
        unnested.episode,
        unnested.measure.key,
        unnested.measure.value
    from (
        select
            run_id,
            pattern,
            episode,
            unnest(measures) as measure
        from representatives
    ) as unnested
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
        group by 1, 2, 3, 4
    )
    group by 1, 2, 3
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
    group by 1, 2, 3
),

run_steps as (
    select distinct
        run_id,
        step
    from history
),

rolled_up as (
    select
        run_id,
        pattern,
        episode,
        min(start_step) as first_step,
        max(step) as last_step,
        count(distinct step) as flagged_steps,
        count(distinct step) filter (
            where signal in ({{ excursion_signals }})
        ) as excursion_steps,
        max(severity_rank) as severity_rank,
        max(strength) as strength,
        {#- The strongest excursion that may be a warning alone (a timing
            spike only when also spike_min_ratio x its trailing median). -#}
        max(strength) filter (
            where signal in ({{ excursion_signals }})
            and (
                signal not in ('max_total_s_spike', 'max_volume_reload_s_spike')
                or list_filter(measures, m -> m.key like '%\_ratio' escape '\')[1].value
                >= {{ var('spike_min_ratio') }}
            )
        ) as lone_strength,
        bool_and(signal in ({{ excursion_signals }})) as only_excursions,
        max(strength) filter (
            where signal in ('reward_plateau', 'elo_plateau', 'reward_mean_at_max')
        ) as flat_points
    from episodes
    group by 1, 2, 3
),

excursion_rates as (
    {#- How often the run shows an excursion of each pattern, over all its
        steps (with one added to each count, so a rate is never 0 or 1). -#}
    select
        run_id,
        rolled_up.pattern,
        (sum(rolled_up.excursion_steps) + 1.0) / (any_value(run_lengths.steps) + 2.0) as rate
    from rolled_up
    inner join run_lengths using (run_id)
    group by 1, 2
),

clusters as (
    {#- An episode of k excursions over m of the run's steps: the chance of
        k or more in m steps at the run's own rate (binomial), times the
        number of such stretches the run holds. Below `finding_alpha` the
        cluster is more than noise. -#}
    select
        rolled_up.run_id,
        rolled_up.pattern,
        rolled_up.episode,
        count(*) as span_steps,
        any_value(rolled_up.excursion_steps) as k,
        any_value(excursion_rates.rate) as rate,
        any_value(run_lengths.steps) as run_steps
    from rolled_up
    inner join excursion_rates using (run_id, pattern)
    inner join run_lengths using (run_id)
    inner join run_steps
        on
            rolled_up.run_id = run_steps.run_id
            and run_steps.step between rolled_up.first_step and rolled_up.last_step
    where rolled_up.excursion_steps >= {{ var('instability_min_spikes') }}
    group by 1, 2, 3
),

cluster_chances as (
    select
        *,
        least(
            1.0,
            list_sum(
                list_transform(
                    range(k, greatest(span_steps, k) + 1),
                    j -> exp(
                        lgamma(greatest(span_steps, k) + 1) - lgamma(j + 1)
                        - lgamma(greatest(span_steps, k) - j + 1)
                        + j * ln(rate) + (greatest(span_steps, k) - j) * ln(1 - rate)
                    )
                )
            ) * run_steps / greatest(span_steps, k)
        ) as chance
    from clusters
),

judged as (
    select
        rolled_up.*,
        cluster_chances.chance as cluster_chance,
        run_lengths.excursion_z,
        case
            {# A plateau is a warning once enough points were flat. #}
            when
                rolled_up.pattern in ('performance_plateau', 'reward_saturation')
                and rolled_up.flat_points < {{ var('plateau_min_windows') }}
                and rolled_up.severity_rank = 2 then 1
            when rolled_up.only_excursions
                then
                    case
                        when cluster_chances.chance < {{ var('finding_alpha') }} then 2
                        when rolled_up.lone_strength >= greatest(
                            {{ spike_z_warning }}, 1.5 * run_lengths.excursion_z
                        ) then 2
                        else 1
                    end
            else rolled_up.severity_rank
        end as judged_rank
    {#- (a run whose only finding comes from another mart, as a cache
        without metrics, may have no history) #}
    from rolled_up
    left join run_lengths using (run_id)
    left join cluster_chances using (run_id, pattern, episode)
),

reported as (
    {#- Excursions that are neither a warning nor beyond what noise gives
        a run this long are not reported. -#}
    select
        run_id,
        pattern,
        episode,
        first_step,
        last_step,
        flagged_steps,
        judged_rank as severity_rank,
        cluster_chance
    from judged
    where not (judged_rank = 1 and only_excursions and strength <= excursion_z)
),

pattern_hypotheses as (
    select
        pattern,
        list(hypothesis order by position) as hypotheses
    from hypotheses
    group by 1
),

labels as (
    select
        labels.pattern,
        labels.label
    from (
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
        ('kl_runaway', 'KL runaway'),
        ('reward_saturation', 'Reward saturation')
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
            json_merge_patch(
                json_object('flagged_steps', reported.flagged_steps),
                case
                    when reported.cluster_chance is not null
                        then json_object(
                            'cluster_chance',
                            round(
                                reported.cluster_chance,
                                2 - cast(
                                    floor(log10(greatest(reported.cluster_chance, 1e-300)))
                                    as integer
                                )
                            )
                        )
                    else json_object()
                end
            ),
            coalesce(evidence.evidence, json_object())
        ) as evidence,
        coalesce(pattern_hypotheses.hypotheses, cast([] as varchar[])) as hypotheses,
        labels.label || case
            when reported.first_step = reported.last_step
                then ' at step ' || reported.first_step
            else ' at steps ' || reported.first_step || '-' || reported.last_step
        end || ': ' || described.details || '.' as summary,
        judged_runs.run_parts
    from reported
    inner join described using (run_id, pattern, episode)
    left join evidence using (run_id, pattern, episode)
    left join pattern_hypotheses using (pattern)
    left join labels using (pattern)
    inner join judged_runs using (run_id)
),

{# one row per run judged, pattern null: how far it was judged #}
judged_marks as (
    select
        run_id,
        run_parts
    from judged_runs
),

marked as (
    select * from final
    union all by name
    select * from judged_marks
)

select * from marked
