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
