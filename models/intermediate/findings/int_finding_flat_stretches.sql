{{ config(incremental_by(['run_id'])) }}
{# The points from which the reward (or Elo) stays flat to the series' end:
   what the plateau and the entropy-collapse rules read. A point starts a
   flat stretch when, from it to the series' end (at least
   greatest(`plateau_window`, `plateau_horizon_fraction` of the points)),
   the least-squares trend is below the flat-slope limit, and its upper
   bound (slope + `trend_z` standard errors) is below
   `plateau_pace_fraction` of the pace so far (after a significant rise)
   or, without one, gains less than `plateau_min_gain` of the series'
   spread by the end. hinge_error says how well a line rising up to the
   point and level after it fits the whole series.

   One row per run, metric and flat starting point of the runs judged, and
   one per run judged with a null metric whose run_parts says how far it
   was judged (macro changed_runs; see int_finding_runs). #}
{%- set spike_window = var('spike_window') -%}
{%- set window = var('plateau_window') -%}
with

judged_runs as (
    {{ changed_runs(ref('int_finding_runs'), ref('int_finding_runs')) }}
),

stats as (
    {{ changed_runs(ref('int_metric_scores'), ref('int_finding_runs')) }}
),

numbered as (
    select
        run_id,
        metric,
        step,
        n,
        value
    from stats
),

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
        {{ quantile('numbered.value', 0.95) }} over whole
        - {{ quantile('numbered.value', 0.05) }} over whole as spread,
        greatest(
            {{ window }},
            cast(round({{ var('plateau_horizon_fraction') }} * count(*) over whole) as integer)
        ) as horizon,
        max(numbered.step) over whole as last_step,
        min(numbered.step) over whole as first_step,
        {#- (the first spike_window points': no FILTER in a window on Spark) #}
        {{ median('case when numbered.n <= ' ~ spike_window ~ ' then numbered.value end') }}
            over whole as first_level
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
        avg(case when value = series_max then 1 else 0 end) over rest as rest_at_max,
        {#- For placing the plateau's start (hinge_error): sums
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
        metric = 'reward_mean' and rest_at_max >= {{ var('saturation_share') }} as is_saturated,
        {#- the hinge's squared error: Syy - Sxy^2 / Sxx (centred sums) #}
        (series_syy - series_sy * series_sy / series_points)
        - power(hinge_sxy - hinge_sx * series_sy / series_points, 2)
        / nullif(hinge_sxx - hinge_sx * hinge_sx / series_points, 0) as hinge_error
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

final as (
    select
        plateau_points.run_id,
        plateau_points.metric,
        plateau_points.step,
        plateau_points.n,
        plateau_points.last_step,
        plateau_points.series_max,
        plateau_points.spread,
        plateau_points.rest_points,
        plateau_points.rest_slope,
        plateau_points.rest_slope_se,
        plateau_points.rest_mean,
        plateau_points.rest_at_max,
        plateau_points.pace_before,
        plateau_points.gain_upper,
        plateau_points.hinge_error,
        plateau_points.rose_before as has_risen_before,
        plateau_points.is_saturated,
        judged_runs.run_parts
    from plateau_points
    inner join judged_runs using (run_id)
    union all
    {#- one row per run judged, metric null: how far it was judged #}
    {{ judged_run_marks([
        'metric', 'step', 'n', 'last_step', 'series_max', 'spread', 'rest_points',
        'rest_slope', 'rest_slope_se', 'rest_mean', 'rest_at_max', 'pace_before',
        'gain_upper', 'hinge_error', 'has_risen_before', 'is_saturated',
    ]) }}
)

select * from final
