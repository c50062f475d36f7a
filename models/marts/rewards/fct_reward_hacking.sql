{# Reward hacking: the reward rising while the performance metric (the var
   performance_metric, named in every row) does not. One row per run and
   reward function (reward_function null: the total reward, i.e. the sum
   of the functions' step means) over the whole run (scope 'run'), and over
   every sliding window of hacking_window (20) consecutive points (scope
   'window', window_end_step its last point), on the steps where the
   performance metric was logged (int_reward_hacking_points).
   Slopes are least squares on the point's index (0, 1, ...), as the GRPO
   reward monitor fits them. Two verdicts, each one of insufficient_data,
   high, medium, aligned (or no_performance_metric: a run whose performance
   metric was never logged gets one row saying so, and no verdict):
   - seed_verdict, the monitor's rule (for parity): fewer than
     hacking_min_steps (5) points: insufficient_data; reward slope > 0 and
     performance slope < 0: high; reward slope > 0 and |performance slope|
     < hacking_flat_slope (0.01): medium; else aligned;
   - verdict, obs's: a series rises (falls) only when its slope is
     significant against its step-to-step noise: t = slope / se >=
     hacking_t (3), se = sigma / sqrt(sum (i - mean i)^2), sigma^2 = the
     sample variance of the point-to-point differences / 2 (a trend moves
     the differences' mean, not their spread). high: the reward rises and
     the performance falls; medium: the reward rises and the performance
     neither rises nor falls, with a slope at or below 0 (an estimate above
     0 that is not yet significant is slow progress, not hacking); else
     aligned. A function whose reward does not rise significantly, such as
     an honest flat one, is never named.
   suspected_functions (on the total's rows): the functions whose verdict is
   high or medium over the same span. #}
with

points as (
    select
        *,
        reward - lag(reward) over series as reward_step_change,
        performance - lag(performance) over series as performance_step_change
    from {{ ref('int_reward_hacking_points') }}
    window series as (partition by run_id, reward_function order by point_index)
),

windowed as (
    select
        run_id,
        reward_function,
        'window' as scope,
        first_value(step) over span as window_start_step,
        step as window_end_step,
        count(*) over span as points,
        regr_slope(reward, point_index) over span as reward_slope,
        regr_slope(performance, point_index) over span as performance_slope,
        regr_sxx(reward, point_index) over span as index_spread,
        var_samp(reward_step_change) over change_span / 2 as reward_noise,
        var_samp(performance_step_change) over change_span / 2 as performance_noise
    from points
    window
        span as (
            partition by run_id, reward_function order by point_index
            rows between {{ var('hacking_window') - 1 }} preceding and current row
        ),
        change_span as (
            partition by run_id, reward_function order by point_index
            rows between {{ var('hacking_window') - 2 }} preceding and current row
        )
    qualify point_index >= {{ var('hacking_window') }} - 1
),

whole as (
    select
        run_id,
        reward_function,
        'run' as scope,
        min(step) as window_start_step,
        max(step) as window_end_step,
        count(*) as points,
        regr_slope(reward, point_index) as reward_slope,
        regr_slope(performance, point_index) as performance_slope,
        regr_sxx(reward, point_index) as index_spread,
        var_samp(reward_step_change) / 2 as reward_noise,
        var_samp(performance_step_change) / 2 as performance_noise
    from points
    group by 1, 2
),

spans as (
    select * from whole
    union all
    select * from windowed
),

{# A flat series' least-squares slope can come out as +-1e-17 rather than 0,
   by the order a parallel aggregate added in; its sign would flip a verdict.
   Slopes within 1e-12 of 0 are 0. #}
snapped as (
    select
        run_id,
        reward_function,
        scope,
        window_start_step,
        window_end_step,
        points,
        case
            when abs(reward_slope) < 1e-12 then 0.0 else reward_slope
        end as reward_slope,
        case
            when abs(performance_slope) < 1e-12 then 0.0 else performance_slope
        end as performance_slope,
        index_spread,
        reward_noise,
        performance_noise
    from spans
),

tested as (
    select
        *,
        {{ slope_t('reward_slope', 'reward_noise', 'index_spread') }} as reward_t,
        {{ slope_t('performance_slope', 'performance_noise', 'index_spread') }} as performance_t
    from snapped
),

judged as (
    select
        *,
        case
            when points < {{ var('hacking_min_steps') }} then 'insufficient_data'
            when reward_slope > 0 and performance_slope < 0 then 'high'
            when reward_slope > 0 and abs(performance_slope) < {{ var('hacking_flat_slope') }}
                then 'medium'
            else 'aligned'
        end as seed_verdict,
        case
            when points < {{ var('hacking_min_steps') }} then 'insufficient_data'
            when
                reward_t >= {{ var('hacking_t') }}
                and performance_t <= -{{ var('hacking_t') }} then 'high'
            when
                reward_t >= {{ var('hacking_t') }}
                and performance_t > -{{ var('hacking_t') }}
                and performance_slope <= 0 then 'medium'
            else 'aligned'
        end as verdict
    from tested
),

suspects as (
    select
        run_id,
        scope,
        window_end_step,
        list(reward_function order by reward_function) as suspected_functions
    from judged
    where reward_function is not null and verdict in ('high', 'medium')
    group by 1, 2, 3
),

rewarded_runs as (
    select distinct run_id from {{ ref('fct_reward_steps') }}
),

judged_runs as (
    select distinct run_id from judged
),

unanchored as (
    select
        run_id,
        cast(null as varchar) as reward_function,
        'run' as scope,
        cast(null as bigint) as window_start_step,
        cast(null as bigint) as window_end_step,
        0 as points,
        cast(null as double) as reward_slope,
        cast(null as double) as performance_slope,
        cast(null as double) as reward_t,
        cast(null as double) as performance_t,
        'no_performance_metric' as seed_verdict,
        'no_performance_metric' as verdict,
        cast(null as varchar[]) as suspected_functions,
        'No verdict: the performance metric {{ var("performance_metric") }}'
        || ' was never logged for this run (set the var performance_metric)' as message
    from rewarded_runs
    anti join judged_runs using (run_id)
),

anchored as (
    select
        judged.run_id,
        judged.reward_function,
        judged.scope,
        judged.window_start_step,
        judged.window_end_step,
        judged.points,
        judged.reward_slope,
        judged.performance_slope,
        judged.reward_t,
        judged.performance_t,
        judged.seed_verdict,
        judged.verdict,
        case
            when judged.reward_function is null
                then coalesce(suspects.suspected_functions, cast([] as varchar[]))
        end as suspected_functions
    from judged
    left join suspects
        on
            judged.run_id = suspects.run_id
            and judged.scope = suspects.scope
            and judged.window_end_step = suspects.window_end_step
),

said as (
    select
        *,
        case verdict
            when 'high'
                then 'Potential reward hacking: rewards increasing but performance decreasing'
            when 'medium' then 'Possible reward hacking: rewards increasing but performance flat'
        end as message
    from anchored
    union all by name
    select * from unanchored
),

final as (
    select
        ---------- ids
        run_id,
        reward_function,
        scope,
        window_start_step,
        window_end_step,

        ---------- strings
        '{{ var("performance_metric") }}' as performance_metric,
        seed_verdict,
        verdict,
        suspected_functions,
        message,

        ---------- numerics
        points,
        reward_slope,
        performance_slope,
        reward_t,
        performance_t

    from said
)

select * from final
