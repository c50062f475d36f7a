{#- Rewards and success: the reward rules, the success rule and its value,
    upsampling's weights and the fits over reward windows. -#}

{% macro reward_rule_holds(rules, value) %}
{#- Whether a reward_quality_rules row holds for `value`: at or above
    `lower` (above it when lower_inclusive is false), below `upper`; a
    blank bound does not bound. -#}
    ({{ value }} is not null
        and ({{ rules }}.lower is null
            or {{ value }} > {{ rules }}.lower
            or ({{ value }} = {{ rules }}.lower and coalesce({{ rules }}.lower_inclusive, true)))
        and ({{ rules }}.upper is null or {{ value }} < {{ rules }}.upper))
{% endmacro %}

{% macro slope_t(slope, noise, index_spread) %}
{#- A least-squares slope over its standard error, the noise being the
    series' step-to-step variance: slope / sqrt(noise / index_spread). A
    series with no noise: 0 when flat, +-infinity when it moves. -#}
    case
        when {{ slope }} is null then null
        when {{ noise }} > 0 and {{ index_spread }} > 0
            then {{ slope }} / sqrt({{ noise }} / {{ index_spread }})
        when {{ slope }} > 0 then cast('infinity' as double)
        when {{ slope }} < 0 then cast('-infinity' as double)
        else 0.0
    end
{% endmacro %}

{% macro rule_texts(component_values, keys) %}
{#- The reward_quality_rules rows that hold for each (keys..., component,
    value) row of `component_values`: one row per text said. -#}
    select
        {%- for key in keys %}
        component_values.{{ key }},
        {%- endfor %}
        rules.rule_order,
        '' as function_a,
        '' as function_b,
        rules.list_name,
        rules.text,
        rules.recommendation
    from {{ component_values }} as component_values
    inner join {{ ref('reward_quality_rules') }} as rules
        on {{ reward_rule_holds('rules', 'component_values.value') }}
        and rules.component = component_values.component
{% endmacro %}

{% macro text_lists(said, keys) %}
{#- The texts of `said` (rows of rule_texts) as the issues, warnings and
    recommendations lists of each (keys...), in the rules' order. -#}
    select
        {{ keys | join(", ") }},
        {{ ordered_list(
            'text', ['rule_order', 'function_a', 'function_b'], filter="list_name = 'issue'"
        ) }} as issues,
        {{ ordered_list(
            'text', ['rule_order', 'function_a', 'function_b'], filter="list_name = 'warning'"
        ) }} as warnings,
        {{ ordered_list(
            'recommendation', ['rule_order', 'function_a', 'function_b'],
            filter='recommendation is not null'
        ) }} as recommendations
    from {{ said }}
    group by {{ keys | join(", ") }}
{% endmacro %}

{% macro reward_quality_score(relation) %}
{#- The GRPO reward monitor's quality score, 0-100, from `relation`'s four
    parts in [0, 1]: 100 x (0.25 consistency + 0.35 discriminability + 0.25
    stability + 0.15 coverage); null when coverage is. -#}
    100.0 * (
        0.25 * {{ relation }}.consistency + 0.35 * {{ relation }}.discriminability
        + 0.25 * {{ relation }}.stability + 0.15 * {{ relation }}.coverage
    )
{% endmacro %}

{% macro success_rule() %}
{#- The build's one definition of a rollout's success, from var `success`,
    as a mapping {kind, function, threshold, text}:
    - `strict`: the seed's, every instruction followed (the rollout's own
      prompt_strict_acc; a rollout without that flag passes at
      var pass_threshold);
    - `score >= X`: the rollout's score reaches X;
    - `<reward function> >= X`: that function's own value for the rollout
      (its rewards map) reaches X; a rollout without the function fails;
    - `auto` (the default, var unset): `strict` where the dumps carry
      instruction flags, else `score >= pass_threshold`, per rollout, which
      is what `strict` does too; only the text differs.
    The var is a string as above, or the mapping `obs build --success`
    passes ({kind: function, function: check_answer, threshold: 3}). It is
    a parameter, never SQL: the function's name must be a plain name and
    the threshold a finite number, else the build stops with one line. -#}
    {%- set given = var('success', 'auto') -%}
    {%- set name_pattern = '^[A-Za-z_][A-Za-z0-9_.:/-]{0,127}$' -%}
    {%- set usage = "var success: expected strict, auto, 'score >= X' or"
        ~ " '<reward function> >= X' (e.g. 'check_answer >= 3'), got " -%}
    {%- if given is none -%}
        {%- set given = 'auto' -%}
    {%- endif -%}
    {%- if given is mapping -%}
        {%- set kind = given.get('kind') -%}
        {%- set function = given.get('function') -%}
        {%- set threshold = given.get('threshold') -%}
    {%- elif given is string -%}
        {%- set text = given | trim -%}
        {%- if text in ('strict', 'auto') -%}
            {%- set kind = text -%}
            {%- set function = none -%}
            {%- set threshold = none -%}
        {%- else -%}
            {%- set found = modules.re.match(
                '^([A-Za-z_][A-Za-z0-9_.:/-]*)\\s*>=\\s*(\\S+)$', text
            ) -%}
            {%- if not found -%}
                {{ exceptions.raise_compiler_error(usage ~ "'" ~ given ~ "'") }}
            {%- endif -%}
            {%- set function = found.group(1) -%}
            {%- set threshold = found.group(2) -%}
            {%- set kind = 'score' if function == 'score' else 'function' -%}
            {%- if kind == 'score' -%}
                {%- set function = none -%}
            {%- endif -%}
        {%- endif -%}
    {%- else -%}
        {{ exceptions.raise_compiler_error(usage ~ given) }}
    {%- endif -%}
    {%- if kind not in ('strict', 'auto', 'score', 'function') -%}
        {{ exceptions.raise_compiler_error(usage ~ given) }}
    {%- endif -%}
    {%- if kind in ('strict', 'auto') -%}
        {{ return({'kind': kind, 'function': none, 'threshold': none, 'text': kind}) }}
    {%- endif -%}
    {%- if kind == 'function' and (
        function is not string or not modules.re.match(name_pattern, function)
    ) -%}
        {{ exceptions.raise_compiler_error(
            "var success: the reward function's name must be a plain name"
            ~ " (letters, digits, _ . : / -), got " ~ function
        ) }}
    {%- endif -%}
    {%- set number_text = threshold | string | trim -%}
    {%- if not modules.re.match(
        '^[+-]?([0-9]+([.][0-9]*)?|[.][0-9]+)([eE][+-]?[0-9]+)?$', number_text
    ) -%}
        {{ exceptions.raise_compiler_error(
            "var success: the threshold must be a finite number, got " ~ threshold
        ) }}
    {%- endif -%}
    {%- set value = number_text | float -%}
    {#- shown as written by a person: 5, not 5.0 -#}
    {%- set shown = (value | int | string)
        if value == (value | int) and value | abs < 1e15 else (value | string) -%}
    {%- set label = 'score' if kind == 'score' else function -%}
    {{ return({
        'kind': kind,
        'function': function if kind == 'function' else none,
        'threshold': value,
        'text': label ~ ' >= ' ~ shown,
    }) }}
{% endmacro %}

{% macro success_condition(
    score='score', prompt_strict_acc='prompt_strict_acc', rewards='rewards'
) %}
{#- A rollout's success under the build's definition (macro success_rule,
    var success), as a boolean SQL expression over its columns: never null
    (a rollout without what the rule reads fails). -#}
    {%- set rule = success_rule() -%}
    {%- if rule.kind in ('strict', 'auto') -%}
        coalesce(
            {{ prompt_strict_acc }} >= 1.0,
            {{ score }} >= {{ var('pass_threshold') }},
            false
        )
    {%- elif rule.kind == 'score' -%}
        coalesce({{ score }} >= {{ rule.threshold }}, false)
    {%- else -%}
        coalesce(
            {{ map_value(rewards, "'" ~ rule.function ~ "'") }}
            >= {{ rule.threshold }},
            false
        )
    {%- endif -%}
{% endmacro %}

{% macro success_value(score='score', rewards='rewards') %}
{#- The number the build's success rule compares with its threshold (the
    score, or the named reward function's value), as a double SQL
    expression; the score under `strict`/`auto` (a rollout without
    instruction flags passes by its score). The marts keep its range per
    run so a threshold that cannot separate them is named. -#}
    {%- set rule = success_rule() -%}
    {%- if rule.kind in ('strict', 'auto', 'score') -%}
        cast({{ score }} as double)
    {%- else -%}
        cast({{ map_value(rewards, "'" ~ rule.function ~ "'") }} as double)
    {%- endif -%}
{% endmacro %}

{% macro upsampling_factor(factor, column) %}
{#- One of the three terms of upsampling_score, whose weights live here only:
    final_score: (1 - final score) * 2; learning_rate: -slope * 1 (a null slope
    counts as 0); forgetting: forgetting events * 0.5. -#}
    {%- set weights = {'final_score': 2, 'learning_rate': 1, 'forgetting': 0.5} -%}
    {%- if factor not in weights -%}
        {{ exceptions.raise_compiler_error(
            "upsampling_factor: factor '" ~ factor ~ "' is not one of "
            ~ weights.keys() | join(', ')
        ) }}
    {%- endif -%}
    {%- if factor == 'final_score' -%}
        (1 - {{ column }}) * {{ weights[factor] }}
    {%- elif factor == 'learning_rate' -%}
        (0.0 - coalesce({{ column }}, 0)) * {{ weights[factor] }}
    {%- else -%}
        {{ column }} * {{ weights[factor] }}
    {%- endif -%}
{% endmacro %}

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

{% macro window_line_fits(points, extra_columns=[]) %}
{#- A select of the least-squares line of `points` (run_id, step, value)
    over each window of the model's `windows` CTE (run_id, first_step,
    last_step, span): its slope (regression_slope), r_squared, the means
    it passes through, how many points it fits, and its values at the
    window's first and last steps (start_value, end_value). extra_columns:
    aggregates of `points` to keep beside them. -#}
    select
        fits.*,
        fits.mean_value + fits.slope * (fits.first_step - fits.mean_step) as start_value,
        fits.mean_value + fits.slope * (fits.last_step - fits.mean_step) as end_value
    from (
        select
            windows.run_id,
            windows.first_step,
            windows.last_step,
            windows.span,
            {%- for column in extra_columns %}
            {{ column }},
            {%- endfor %}
            {{ regression_slope(points ~ '.value', points ~ '.step') }} as slope,
            power(corr({{ points }}.value, {{ points }}.step), 2) as r_squared,
            avg({{ points }}.value) as mean_value,
            avg({{ points }}.step) as mean_step,
            count(*) as points
        from windows
        inner join {{ points }}
            on
                windows.run_id = {{ points }}.run_id
                and {{ points }}.step between windows.first_step and windows.last_step
        group by 1, 2, 3, 4
    ) as fits
{%- endmacro %}
