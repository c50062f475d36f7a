{{
    config(
        materialized='incremental',
        unique_key=['run_id'],
    )
}}
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
   Each point also carries what the findings' trend rules compare: the
   level of the points before its window (baseline_*) and, for the metrics
   those rules read, the least-squares trend of its window (window_*).
   Built by run (macro changed_runs). #}
{%- set spike_window = var('spike_window') -%}
{%- set min_history = var('spike_min_history') -%}
{%- set window = var('plateau_window') -%}
{%- set log_metrics = "('grad_norm', 'max_total_s', 'max_volume_reload_s')" -%}
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
        and isfinite(value)
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
        row_number() over (partition by run_id, metric order by step) as n
    from series
    where value is not null
),

trailing_stats as (
    select
        *,
        median(v) over prior as trailing_median,
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
        1.4826 * mad(residual) over (
            partition by run_id, metric order by n
            rows between {{ spike_window }} preceding and 1 preceding
        ) as trailing_spread
    from scored
),

noise as (
    select
        run_id,
        metric,
        nullif(
            greatest(
                1.4826 * mad(residual),
                quantile_cont(abs(residual), 0.95) / 1.96
            ),
            0
        ) as noise_scale
    from scored
    group by 1, 2
),

baselines as (
    {# Per point, the `spike_window` points before its own plateau window
       (a baseline level). #}
    select
        run_id,
        metric,
        n,
        {{ exact_float('avg(value) over baseline') }} as baseline_mean,
        {{ exact_float('stddev_samp(value) over baseline') }} as baseline_std,
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
        case
            when noise.noise_scale > 0 then
                residuals.residual
                / greatest(noise.noise_scale, coalesce(residuals.trailing_spread, 0))
        end as z,
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
)

select * from final
