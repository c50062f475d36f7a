{% test agent_eval_invariants(model) %}
{#- The eval statistics' own arithmetic (the agent trainer's invariants): one
    row per broken rule with the rows that break it. Run as a warning: a
    trainer that logs inconsistent numbers is worth knowing about, not a
    reason to stop a build. -#}
with

counted as (
    select
        count(*) filter (
            where total_unique_searches + total_repeated_searches != total_searches
        ) as "total_unique_searches + total_repeated_searches != total_searches",
        count(*) filter (
            where correct_answers > attempted_answer
        ) as "correct_answers > attempted_answer",
        count(*) filter (
            where attempted_answer > total_samples
        ) as "attempted_answer > total_samples",
        count(*) filter (where num_idk > total_samples) as "num_idk > total_samples",
        count(*) filter (
            where abs(accuracy - correct_answers / nullif(total_samples, 0)) > 0.005
        ) as "accuracy != correct_answers / total_samples"
    from {{ model }}
),

broken as (
    unpivot counted on columns(*) into name rule value failing_rows
)

select * from broken where failing_rows > 0
{% endtest %}

{% test agent_group_invariants(model) %}
{#- The group summary's arithmetic, as agent_eval_invariants (a warning). -#}
with

counted as (
    select
        count(*) filter (
            where groups_kept + groups_filtered != groups_total
        ) as "groups_kept + groups_filtered != groups_total",
        count(*) filter (
            where trainable_tokens > total_tokens
        ) as "trainable_tokens > total_tokens",
        count(*) filter (where finished_early > rollouts) as "finished_early > rollouts"
    from {{ model }}
),

broken as (
    unpivot counted on columns(*) into name rule value failing_rows
)

select * from broken where failing_rows > 0
{% endtest %}
