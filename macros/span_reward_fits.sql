{% macro span_reward_fits(spans, rewards, points, window) %}
{#- fct_reward_hacking's fit of the reward over each span: a select of
    every row of `spans` (run_id, reward_function, scope, window_start_step,
    window_end_step, point_index: the index of the span's last performance
    point; and any other columns), with the reward's fit on the rows of
    `rewards` (run_id, reward_function, step, reward, reward_change,
    step_gap) in the span's steps: reward_points, reward_slope (on the
    step), reward_step_spread, and the variances and covariance of the
    changes between two of those steps (the changes into every one but the
    first): reward_change_variance, reward_change_gap_covariance,
    reward_gap_variance. A window span covers the `window` performance
    points of `points` (run_id, reward_function, step, point_index) ending
    at its point_index; a run span, the steps from its first to its last. -#}
    {{ return(adapter.dispatch('span_reward_fits', 'obs')(spans, rewards, points, window)) }}
{% endmacro %}

{#- Spark's window frames need literal bounds: the fit is an aggregate
    over a join of each span with its reward steps. A window span joins the
    steps placed after each of its `window` points (a step after the
    latest point at or before it, up to the next), an equi-join on the
    point's index; a range join on the steps would compare every window
    with every step of its series. A run span joins its series' steps. -#}
{% macro default__span_reward_fits(spans, rewards, points, window) %}
    {%- set placed -%}
        select *
        from (
            select
                *,
                max(point_index) over (
                    partition by run_id, reward_function
                    order by step, point_step nulls last
                    rows between unbounded preceding and current row
                ) as placed_after
            from (
                select
                    run_id,
                    reward_function,
                    step,
                    step as point_step,
                    point_index,
                    cast(null as double) as reward,
                    cast(null as double) as reward_change,
                    cast(null as bigint) as step_gap
                from {{ points }}
                union all
                select
                    run_id,
                    reward_function,
                    step,
                    cast(null as bigint),
                    cast(null as bigint),
                    reward,
                    reward_change,
                    step_gap
                from {{ rewards }}
            ) as merged
        ) as ordered
        where point_step is null and placed_after is not null
    {%- endset -%}
    {%- set in_spans -%}
        select
            spans.run_id,
            spans.reward_function,
            spans.scope,
            spans.window_start_step,
            spans.window_end_step,
            placed.step,
            placed.reward,
            placed.reward_change,
            placed.step_gap
        from {{ spans }} as spans
        cross join (
            {%- for offset in range(window) %}
            select {{ offset }} as point_offset{{ ' union all' if not loop.last }}
            {%- endfor %}
        ) as offsets
        inner join ({{ placed }}) as placed
            on
                spans.run_id = placed.run_id
                and coalesce(spans.reward_function, '') = coalesce(placed.reward_function, '')
                and placed.placed_after = spans.point_index - offsets.point_offset
                and placed.step <= spans.window_end_step
        where spans.scope = 'window'
        union all
        select
            spans.run_id,
            spans.reward_function,
            spans.scope,
            spans.window_start_step,
            spans.window_end_step,
            rewards.step,
            rewards.reward,
            rewards.reward_change,
            rewards.step_gap
        from {{ spans }} as spans
        inner join {{ rewards }} as rewards
            on
                spans.run_id = rewards.run_id
                and coalesce(spans.reward_function, '') = coalesce(rewards.reward_function, '')
                and rewards.step between spans.window_start_step and spans.window_end_step
        where spans.scope = 'run'
    {%- endset -%}
    {#- a change between two steps of the span: from a step at or after its first -#}
    {%- set in_span = 'step - step_gap >= window_start_step' %}
    select
        spans.*,
        coalesce(fits.reward_points, 0) as reward_points,
        fits.reward_slope,
        fits.reward_step_spread,
        fits.reward_change_variance,
        fits.reward_change_gap_covariance,
        fits.reward_gap_variance
    from {{ spans }} as spans
    left join (
        select
            run_id,
            reward_function,
            scope,
            window_end_step,
            count(reward) as reward_points,
            {{ least_squares_slope('reward', 'step') }} as reward_slope,
            regr_sxx(reward, step) as reward_step_spread,
            var_samp(case when {{ in_span }} then reward_change end) as reward_change_variance,
            covar_samp(
                case when {{ in_span }} then reward_change end, case when {{ in_span }} then step_gap end
            ) as reward_change_gap_covariance,
            var_samp(case when {{ in_span }} then step_gap end) as reward_gap_variance
        from ({{ in_spans }}) as in_spans
        group by run_id, reward_function, scope, window_end_step
    ) as fits
        on
            spans.run_id = fits.run_id
            and coalesce(spans.reward_function, '') = coalesce(fits.reward_function, '')
            and spans.scope = fits.scope
            and spans.window_end_step = fits.window_end_step
{% endmacro %}

{#- DuckDB (faster so): the spans and the reward steps in one series per run
    and function, ordered by step; each span's row sits at its last step,
    and a frame reaching back to its first step holds exactly the reward's
    steps in the span (the aggregates skip the span rows' nulls); the
    changes' frame reaches back to the step after the first reward step
    there. -#}
{% macro duckdb__span_reward_fits(spans, rewards, points, window) %}
    select
        * exclude (
            step, span_length, reward, reward_step, reward_change, reward_gap,
            first_reward_step, reward_reach
        ),
        var_samp(reward_change) over changes as reward_change_variance,
        covar_samp(reward_change, reward_gap) over changes as reward_change_gap_covariance,
        var_samp(reward_gap) over changes as reward_gap_variance
    from (
        select
            *,
            greatest(coalesce(window_end_step - first_reward_step - 1, 0), 0) as reward_reach
        from (
            select
                *,
                count(reward) over span as reward_points,
                min(reward_step) over span as first_reward_step,
                regr_slope(reward, reward_step) over span as reward_slope,
                regr_sxx(reward, reward_step) over span as reward_step_spread
            from (
                select
                    *,
                    window_end_step as step,
                    window_end_step - window_start_step as span_length
                from {{ spans }}
                union all by name
                select
                    run_id,
                    reward_function,
                    step,
                    0 as span_length,
                    reward,
                    step as reward_step,
                    reward_change,
                    step_gap as reward_gap
                from {{ rewards }}
            ) as observed
            window span as (
                partition by run_id, reward_function order by step
                range between span_length preceding and current row
            )
        ) as fitted
    ) as reaching
    window changes as (
        partition by run_id, reward_function order by step
        range between reward_reach preceding and current row
    )
    qualify scope is not null
{% endmacro %}
