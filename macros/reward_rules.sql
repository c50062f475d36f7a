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
