{# One row per alert: a rule of the alert_rules seed whose condition starts
   to hold at a step (it holds there and did not at the run's previous step
   with a value), so an episode of many steps is one alert, at its first
   step. Rules watch fct_reward_steps' columns under the GRPO reward
   monitor's metric names:
   - threshold: the value is less than, greater than, or equal (within
     1e-6) to the threshold; message `{metric} ({value:.4f}) less than
     threshold ({threshold:.4f})`;
   - trend: the least-squares slope of the metric's last window_size values
     on their index (0, 1, ...: per logged step, not per training step) is
     below min_slope or above max_slope, once window_size values exist;
     message `{metric} trend slope ({slope:.6f}) below minimum ({min:.6f})`;
   - hacking: fct_reward_hacking's verdict for the total reward over a
     sliding window is high (over the whole run, for a run too short for one
     window); the step is the window's last; the message names the suspected
     functions. #}
with

steps as (
    select * from {{ ref('fct_reward_steps') }}
),

rules as (
    select * from {{ ref('alert_rules') }}
    where enabled
),

{# fct_reward_steps' columns under the monitor's metric names #}
named as (
    select
        run_id,
        step,
        mean as mean_reward,
        std as std_reward,
        min as min_reward,
        max as max_reward,
        total as total_reward,
        signal_to_noise,
        entropy as reward_entropy,
        variance as reward_variance,
        kl_divergence,
        policy_entropy,
        advantage_mean,
        advantage_std,
        performance
    from steps
),

metric_values as (
    {{ unpivot_columns(
        'named',
        [
            'mean_reward', 'std_reward', 'min_reward', 'max_reward', 'total_reward',
            'signal_to_noise', 'reward_entropy', 'reward_variance', 'kl_divergence',
            'policy_entropy', 'advantage_mean', 'advantage_std', 'performance',
        ],
        'metric',
        'value',
        keep=['run_id', 'step'],
    ) }}
),

indexed as (
    select
        *,
        row_number() over (partition by run_id, metric order by step) - 1 as value_index
    from metric_values
    where value is not null
),

threshold_checks as (
    select
        indexed.run_id,
        indexed.step,
        indexed.value_index,
        rules.rule_name,
        rules.kind,
        rules.metric,
        indexed.value,
        rules.threshold,
        rules.level,
        case rules.condition
            when 'less' then indexed.value < rules.threshold
            when 'greater' then indexed.value > rules.threshold
            when 'equal' then abs(indexed.value - rules.threshold) < 1e-6
        end as holds,
        rules.metric || ' (' || {{ format_fixed('indexed.value', 4) }} || ') ' || rules.condition
        || ' than threshold (' || {{ format_fixed('rules.threshold', 4) }} || ')' as message
    from indexed
    inner join rules on indexed.metric = rules.metric and rules.kind = 'threshold'
),

trend_fits as (
    select
        latest.run_id,
        latest.step,
        latest.value_index,
        rules.rule_name,
        rules.kind,
        rules.metric,
        rules.min_slope,
        rules.max_slope,
        rules.window_size,
        rules.level,
        count(*) as fitted,
        {#- exact: a trend rule's threshold judges it #}
        {{ exact_float(least_squares_slope('earlier.value', 'earlier.value_index')) }} as slope
    from indexed as latest
    inner join rules on latest.metric = rules.metric and rules.kind = 'trend'
    inner join indexed as earlier
        on
            latest.run_id = earlier.run_id
            and latest.metric = earlier.metric
            and earlier.value_index between latest.value_index - rules.window_size + 1
            and latest.value_index
    group by 1, 2, 3, 4, 5, 6, 7, 8, 9, 10
),

trend_checks as (
    select
        run_id,
        step,
        value_index,
        rule_name,
        kind,
        metric,
        slope as value,
        coalesce(
            case when slope < min_slope then min_slope end,
            case when slope > max_slope then max_slope end,
            min_slope,
            max_slope
        ) as threshold,
        level,
        fitted = window_size and (slope < min_slope or slope > max_slope) as holds,
        case
            when slope < min_slope
                then
                    metric || ' trend slope (' || {{ format_fixed('slope', 6) }}
                    || ') below minimum (' || {{ format_fixed('min_slope', 6) }} || ')'
            else
                metric || ' trend slope (' || {{ format_fixed('slope', 6) }}
                || ') above maximum (' || {{ format_fixed('max_slope', 6) }} || ')'
        end as message
    from trend_fits
),

hacking_spans as (
    select *
    from {{ ref('fct_reward_hacking') }}
    where
        reward_function is null
        and verdict != 'no_performance_metric'
        and (
            scope = 'window'
            or run_id not in (
                select windowed.run_id from {{ ref('fct_reward_hacking') }} as windowed
                where windowed.scope = 'window'
            )
        )
),

hacking_checks as (
    select
        hacking_spans.run_id,
        hacking_spans.window_end_step as step,
        row_number() over (
            partition by hacking_spans.run_id, rules.rule_name
            order by hacking_spans.window_end_step
        ) - 1 as value_index,
        rules.rule_name,
        rules.kind,
        rules.metric,
        hacking_spans.reward_slope as value,
        cast(null as double) as threshold,
        rules.level,
        hacking_spans.verdict = 'high' as holds,
        coalesce(rules.message, hacking_spans.message)
        || case
            when {{ list_size('hacking_spans.suspected_functions') }} > 0
                then
                    ' (suspected: ' || {{ list_join('hacking_spans.suspected_functions', "', '") }}
                    || ')'
            else ''
        end as message
    from hacking_spans
    inner join rules on rules.kind = 'hacking'
),

checks as (
    select
        run_id,
        step,
        value_index,
        rule_name,
        kind,
        metric,
        value,
        threshold,
        level,
        holds,
        message
    from threshold_checks
    union all
    select
        run_id,
        step,
        value_index,
        rule_name,
        kind,
        metric,
        value,
        threshold,
        level,
        holds,
        message
    from trend_checks
    union all
    select
        run_id,
        step,
        value_index,
        rule_name,
        kind,
        metric,
        value,
        threshold,
        level,
        holds,
        message
    from hacking_checks
),

starts as (
    select
        *,
        coalesce(
            lag(holds) over (partition by run_id, rule_name order by value_index), false
        ) as held_before
    from checks
),

final as (
    select
        ---------- ids
        run_id,
        step,
        rule_name,

        ---------- strings
        kind,
        metric,
        level,
        message,

        ---------- numerics
        value,
        threshold,
        case level when 'info' then 1 when 'warning' then 2 when 'error' then 3 else 4 end
            as level_rank

    from starts
    where holds and not held_before
)

select * from final
