{{ config(incremental_by(['run_id'])) }}
{# One row per run and metric: where it started and ended, its range, and how
   it moved. Statistics are over finite values (a NaN would poison them); the
   non-finite ones are counted. Built by run: only runs that received points
   since the last build are summarised again (macro changed_runs). #}
with

history as (
    {{ changed_runs(ref('fct_metric_history'), ref('fct_metric_history')) }}
),

finite as (
    select * from history
    where {{ is_finite('value') }}
),

ranked as (
    select
        *,
        row_number() over (partition by run_id, metric order by step desc) as from_last
    from finite
),

stats as (
    select
        run_id,
        metric,
        any_value(canonical_metric) as canonical_metric,
        count(*) as data_points,
        min(step) as first_step,
        max(step) as last_step,
        {{ arg_min('value', 'step') }} as first,
        {{ arg_max('value', 'step') }} as last,
        min(value) as min,
        max(value) as max,
        avg(value) as mean,
        stddev_samp(value) as std
    from ranked
    group by 1, 2
),

recent as (
    select
        run_id,
        metric,
        {{ regression_slope('value', 'step') }} as recent_slope
    from ranked
    where from_last <= {{ var('summary_window') }}
    group by 1, 2
),

non_finite as (
    select
        run_id,
        metric,
        any_value(canonical_metric) as canonical_metric,
        count(*) filter (where not {{ is_finite('value') }}) as non_finite_points,
        count(*) filter (where isnan(value)) as nan_points,
        max(run_parts) as run_parts
    from history
    group by 1, 2
),

reached as (
    {# The first step at which the metric covered 90% of its move from first
       to last (up or down); null when it did not move. #}
    select
        finite.run_id,
        finite.metric,
        min(finite.step) as step_at_90pct
    from finite
    inner join stats using (run_id, metric)
    where
        stats.last <> stats.first
        and (finite.value - stats.first) / (stats.last - stats.first) >= 0.9
    group by 1, 2
),

final as (
    select
        non_finite.run_id,
        non_finite.metric,
        non_finite.canonical_metric,
        coalesce(stats.data_points, 0) as data_points,
        non_finite.non_finite_points,
        non_finite.nan_points,
        stats.first_step,
        stats.last_step,
        stats.first,
        stats.last,
        stats.min,
        stats.max,
        stats.mean,
        stats.std,
        recent.recent_slope,
        reached.step_at_90pct,
        reached.step_at_90pct - stats.first_step as steps_to_90pct,
        non_finite.run_parts
    from non_finite
    left join stats using (run_id, metric)
    left join recent using (run_id, metric)
    left join reached using (run_id, metric)
)

select * from final
