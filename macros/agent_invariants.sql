{% test agent_eval_invariants(model) %}
{#- The eval statistics' own arithmetic (the agent trainer's invariants): one
    row per broken rule with the rows that break it. Run as a warning: a
    trainer that logs inconsistent numbers is worth knowing about, not a
    reason to stop a build. -#}
{{ _agent_invariants(model, [
    ('total_unique_searches + total_repeated_searches != total_searches',
        'total_unique_searches + total_repeated_searches != total_searches'),
    ('correct_answers > attempted_answer', 'correct_answers > attempted_answer'),
    ('attempted_answer > total_samples', 'attempted_answer > total_samples'),
    ('num_idk > total_samples', 'num_idk > total_samples'),
    ('abs(accuracy - correct_answers / nullif(total_samples, 0)) > 0.005',
        'accuracy != correct_answers / total_samples'),
]) }}
{% endtest %}

{% test agent_group_invariants(model) %}
{#- The group summary's arithmetic, as agent_eval_invariants (a warning). -#}
{{ _agent_invariants(model, [
    ('groups_kept + groups_filtered != groups_total', 'groups_kept + groups_filtered != groups_total'),
    ('trainable_tokens > total_tokens', 'trainable_tokens > total_tokens'),
    ('finished_early > rollouts', 'finished_early > rollouts'),
]) }}
{% endtest %}

{% macro _agent_invariants(model, rules) %}
{#- One row per rule (condition, name) some rows of `model` break: the rule's
    name and how many rows break it (one scan, then unpivot_columns). -#}
with

counted as (
    select
        {%- for condition, name in rules %}
        count(*) filter (where {{ condition }}) as {{ adapter.quote(name) }}{{ "," if not loop.last }}
        {%- endfor %}
    from {{ model }}
),

broken as (
    {{ unpivot_columns('counted', rules | map(attribute=1) | list, 'rule', 'failing_rows') }}
)

select * from broken where failing_rows > 0
{% endmacro %}
