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
