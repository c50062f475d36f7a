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

metric_values as (
    select
        run_id,
        step,
        metric,
        value
    from steps
    unpivot (
        value for metric in (
            mean as mean_reward,
            std as std_reward,
            min as min_reward,
            max as max_reward,
            total as total_reward,
            signal_to_noise as signal_to_noise,
            entropy as reward_entropy,
            variance as reward_variance,
            kl_divergence as kl_divergence,
            policy_entropy as policy_entropy,
            advantage_mean as advantage_mean,
            advantage_std as advantage_std,
            performance as performance
        )
    )
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
        rules.metric || ' (' || printf('%.4f', indexed.value) || ') ' || rules.condition
        || ' than threshold (' || printf('%.4f', rules.threshold) || ')' as message
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
        {{ exact_float('regr_slope(earlier.value, earlier.value_index)') }} as slope
    from indexed as latest
    inner join rules on latest.metric = rules.metric and rules.kind = 'trend'
    inner join indexed as earlier
        on
            latest.run_id = earlier.run_id
            and latest.metric = earlier.metric
            and earlier.value_index between latest.value_index - rules.window_size + 1
            and latest.value_index
    group by all
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
                    metric || ' trend slope (' || printf('%.6f', slope) || ') below minimum ('
                    || printf('%.6f', min_slope) || ')'
            else
                metric || ' trend slope (' || printf('%.6f', slope) || ') above maximum ('
                || printf('%.6f', max_slope) || ')'
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
            when len(hacking_spans.suspected_functions) > 0
                then
                    ' (suspected: ' || array_to_string(hacking_spans.suspected_functions, ', ')
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
