{{ config(incremental_by(['run_id'])) }}
{# Every point of the metrics the findings judge, measured against its own
   series' noise, so fct_run_findings and fct_rollout_reliability call the
   same points excursions:
   - a point's residual is its distance from the median of the
     `spike_window` points before it (in log space for gradient norms and
     timings, whose noise is multiplicative; scored once
     `spike_min_history` points precede it);
   - the series' noise scale is the larger of 1.4826 x the median absolute
     deviation of its residuals and their 95th absolute percentile / 1.96
     (both equal the standard deviation of normal noise; the second does not
     vanish when most values are one number, as GRPO's loss of 0);
   - z = residual / the larger of that scale and the spread (1.4826 x MAD)
     of the residuals just before the point, so noise that shrinks over a
     run does not make its noisier start look wild; null for a series with
     no spread.
   reward_mean also enters as `reward_mean_change`, its step-to-step change:
   a trend cancels out of it, so a swing of the reward stands out.
   Burn-in: the first points of loss, grad_norm and reward_mean_change
   have no trailing window yet (fewer than `spike_min_history` points
   before them), and a run that blows up at its start does it there. They
   are scored on their step-to-step change instead (the change since the
   series' previous point, in log space for grad_norm; reward_mean_change
   is already one): residual = change - the median of the series' first
   `spike_window` changes (its early trend), over the larger of the
   robust scale of every change of the series (1.4826 x MAD, or the 95th
   absolute percentile of their distance from their median / 1.96), the
   spread (1.4826 x MAD) of those first changes, and `burn_in_range_share`
   of the series' range (95th minus 5th percentile of its values; the
   reward's for reward_mean_change). So a smooth fall from a high start (a
   gradient norm decaying over its first steps) is not a jump, a start
   noisier than the rest of the run is judged by its own noise, and the
   bend of a curve with next to no noise (a noiseless power law's first
   steps) is not a swing. Scored once the series has `spike_min_history` changes;
   a series' first point, with no change into it, is not scored. Not for
   the timings (a first step is often slow) nor the extraction rate
   (low at the start while a model learns the format).
   Each point also carries what the findings' trend rules compare: the
   level of the points before its window (baseline_*) and, for the metrics
   those rules read, the least-squares trend of its window (window_*).
   Built by run (macro changed_runs). #}
{%- set spike_window = var('spike_window') -%}
{%- set min_history = var('spike_min_history') -%}
{%- set window = var('plateau_window') -%}
{%- set log_metrics = "('grad_norm', 'max_total_s', 'max_volume_reload_s')" -%}
{%- set burn_in_metrics = "('loss', 'grad_norm', 'reward_mean_change')" -%}
with

changed_history as (
    {{ changed_runs(ref('int_metric_history'), ref('int_metric_history')) }}
),

run_parts as (
    select
        run_id,
        max(run_parts) as run_parts
    from changed_history
    group by 1
),

finite_points as (
    select
        run_id,
        canonical_metric as metric,
        step,
        value
    from changed_history
    where
        canonical_metric in {{ judged_metrics() }}
        and {{ is_finite('value') }}
),

series as (
    {# `v`: the value, or its log for the metrics with multiplicative noise
       (which must then be positive). #}
    select
        run_id,
        metric,
        step,
        value,
        case when metric in {{ log_metrics }} then ln(value) else value end as v
    from finite_points
    where metric not in {{ log_metrics }} or value > 0
    union all
    select
        run_id,
        'reward_mean_change' as metric,
        step,
        value - lag(value) over (partition by run_id order by step) as value,
        value - lag(value) over (partition by run_id order by step) as v
    from finite_points
    where metric = 'reward_mean'
),

numbered as (
    select
        *,
        row_number() over (partition by run_id, metric order by step) as n,
        lag(value) over (partition by run_id, metric order by step) as previous_value
    from series
    where value is not null
),

trailing_stats as (
    select
        *,
        {{ median('v') }} over prior as trailing_median,
        count(*) over prior as trailing_points
    from numbered
    window prior as (
        partition by run_id, metric order by n
        rows between {{ spike_window }} preceding and 1 preceding
    )
),

scored as (
    select
        *,
        case
            when trailing_points >= {{ min_history }} then v - trailing_median
        end as residual
    from trailing_stats
),

residuals as (
    select
        *,
        1.4826 * {{ mad('residual', over='(
            partition by run_id, metric order by n
            rows between ' ~ spike_window ~ ' preceding and 1 preceding
        )') }} as trailing_spread
    from scored
),

noise as (
    select
        run_id,
        metric,
        nullif(
            greatest(
                1.4826 * {{ mad('residual') }},
                {{ quantile('abs(residual)', 0.95) }} / 1.96
            ),
            0
        ) as noise_scale
    from scored
    group by 1, 2
),

burn_in_changes as (
    {# The burn-in's measure of each point: its change since the series'
       previous point (reward_mean_change: its value, already a change),
       numbered from the series' first change. #}
    select
        run_id,
        metric,
        n,
        change,
        row_number() over (partition by run_id, metric order by n) as change_n
    from (
        select
            run_id,
            metric,
            n,
            case
                when metric = 'reward_mean_change' then v
                else v - lag(v) over (partition by run_id, metric order by n)
            end as change
        from numbered
        where metric in {{ burn_in_metrics }}
    ) as measured
    where change is not null
),

burn_in_centres as (
    {# The series' changes: their median and spread, and those of its first
       `spike_window` changes (the early trend and noise). #}
    select
        run_id,
        metric,
        count(*) as changes,
        {{ median('change') }} as change_median,
        1.4826 * {{ mad('change') }} as change_spread,
        {{ median('change') }} filter (where change_n <= {{ spike_window }}) as head_median,
        1.4826 * {{ mad('change', filter='change_n <= ' ~ spike_window) }} as head_spread
    from burn_in_changes
    group by 1, 2
),

level_ranges as (
    {# The range of the series whose changes the burn-in scores. #}
    select
        run_id,
        case when metric = 'reward_mean' then 'reward_mean_change' else metric end as metric,
        {{ quantile('v', 0.95) }} - {{ quantile('v', 0.05) }} as level_range
    from numbered
    where metric in ('loss', 'grad_norm', 'reward_mean')
    group by 1, 2
),

burn_in_noise as (
    select
        burn_in_changes.run_id,
        burn_in_changes.metric,
        nullif(
            greatest(
                any_value(burn_in_centres.change_spread),
                {{ quantile(
                    'abs(burn_in_changes.change - burn_in_centres.change_median)', 0.95
                ) }} / 1.96,
                {{ var('burn_in_range_share') }} * any_value(level_ranges.level_range)
            ),
            0
        ) as change_scale
    from burn_in_changes
    inner join burn_in_centres using (run_id, metric)
    inner join level_ranges using (run_id, metric)
    group by 1, 2
),

burn_in_scores as (
    {# The points with fewer than `spike_min_history` points before them,
       in a series with at least that many changes. #}
    select
        burn_in_changes.run_id,
        burn_in_changes.metric,
        burn_in_changes.n,
        burn_in_changes.change - burn_in_centres.head_median as burn_in_residual,
        greatest(burn_in_noise.change_scale, coalesce(burn_in_centres.head_spread, 0))
            as burn_in_scale,
        burn_in_centres.head_median
    from burn_in_changes
    inner join burn_in_centres using (run_id, metric)
    inner join burn_in_noise using (run_id, metric)
    where
        burn_in_changes.n <= {{ min_history }}
        and burn_in_centres.changes >= {{ min_history }}
        and burn_in_noise.change_scale > 0
),

baselines as (
    {# Per point, the `spike_window` points before its own plateau window
       (a baseline level). #}
    select
        run_id,
        metric,
        n,
        {#- exact: the findings weigh a window's mean against it #}
        {{ exact_float('avg(value) over baseline') }} as baseline_mean,
        stddev_samp(value) over baseline as baseline_std,
        count(*) over baseline as baseline_points
    from numbered
    window baseline as (
        partition by run_id, metric order by n
        rows between {{ window + spike_window - 1 }} preceding and {{ window }} preceding
    )
),

trend_windows as (
    {# The last `plateau_window` points up to each point, for the metrics
       whose rules look at a trend. #}
    select
        point.run_id,
        point.metric,
        point.n,
        min(member.step) as window_first_step,
        count(*) as window_points,
        {#- A correlation below 1e-12 is the rounding of a window with no
            trend (0 and 1 placed symmetrically): its slope and r-squared
            are 0, not noise whose sign follows the order the rows were
            added in. #}
        case
            when abs(corr(member.value, member.step)) < 1e-12 then 0
            else {{ regression_slope('member.value', 'member.step') }}
        end as window_slope,
        case
            when not (var_pop(member.value) > 0 and var_pop(member.step) > 0) then null
            when abs(corr(member.value, member.step)) < 1e-12 then 0
            else power(corr(member.value, member.step), 2)
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

final as (
    select
        residuals.run_id,
        residuals.metric,
        residuals.step,
        residuals.n,
        residuals.value,
        {#- in the metric's own units #}
        case
            when residuals.metric in {{ log_metrics }} then exp(residuals.trailing_median)
            else residuals.trailing_median
        end as trailing_median,
        residuals.trailing_points,
        residuals.residual,
        residuals.trailing_spread,
        noise.noise_scale,
        coalesce(
            case
                when noise.noise_scale > 0 then
                    residuals.residual
                    / greatest(noise.noise_scale, coalesce(residuals.trailing_spread, 0))
            end,
            burn_in_scores.burn_in_residual / burn_in_scores.burn_in_scale
        ) as z,
        burn_in_scores.n is not null as is_burn_in,
        burn_in_scores.burn_in_residual,
        burn_in_scores.burn_in_scale,
        {#- what a burn-in point is compared with, in the metric's units: the
            series' previous value, or reward_mean_change's early median #}
        case
            when burn_in_scores.n is null then null
            when residuals.metric = 'reward_mean_change' then burn_in_scores.head_median
            else residuals.previous_value
        end as burn_in_reference,
        baselines.baseline_mean,
        baselines.baseline_std,
        baselines.baseline_points,
        trend_windows.window_first_step,
        trend_windows.window_points,
        trend_windows.window_slope,
        trend_windows.window_r2,
        trend_windows.window_mean,
        run_parts.run_parts
    from residuals
    inner join noise using (run_id, metric)
    inner join run_parts using (run_id)
    inner join baselines using (run_id, metric, n)
    left join trend_windows using (run_id, metric, n)
    left join burn_in_scores using (run_id, metric, n)
)

select * from final
