{#- Generic data tests: the column rules and the agent eval invariants. -#}

{% test column_rules(model, key=none, not_null=none, ranges=none, accepted_values=none) %}
{#- Every rule of a model in one test: one scan of the model counts the rows
    breaking each rule, and the test returns one row per broken rule (rule,
    failing_rows). One test per model instead of one per column keeps a
    build's fixed cost small: dbt spends about as long running a test as the
    test spends in DuckDB. -#}
{%- set checks = [] -%}
{%- for column in not_null or [] -%}
    {%- do checks.append((column ~ " is null", column ~ " is null")) -%}
{%- endfor -%}
{%- for column, bounds in (ranges or {}).items() -%}
    {%- set low, high = bounds -%}
    {%- set parts = [] -%}
    {%- if low is not none %}{% do parts.append(column ~ " < " ~ low) %}{% endif -%}
    {%- if high is not none %}{% do parts.append(column ~ " > " ~ high) %}{% endif -%}
    {%- do checks.append((
        parts | join(" or "),
        column ~ " outside [" ~ (low if low is not none else "-inf") ~ ", "
        ~ (high if high is not none else "inf") ~ "]"
    )) -%}
{%- endfor -%}
{%- for column, values in (accepted_values or {}).items() -%}
    {%- set quoted = [] -%}
    {%- for value in values -%}
        {%- do quoted.append("'" ~ value ~ "'" if value is string else value | string) -%}
    {%- endfor -%}
    {%- do checks.append((
        column ~ " not in (" ~ quoted | join(", ") ~ ")",
        column ~ " not in (" ~ values | join(", ") ~ ")"
    )) -%}
{%- endfor -%}
with

{% if checks %}
counted as (
    select
        {%- for condition, label in checks %}
        count(*) filter (where {{ condition }}) as {{ adapter.quote(label) }}{{ "," if not loop.last }}
        {%- endfor %}
    from {{ model }}
),

broken as (
    {{ unpivot_columns('counted', checks | map(attribute=1) | list, 'rule', 'failing_rows') }}
),
{% endif %}

{% if key %}
duplicated as (
    select
        'duplicate ({{ key | join(", ") }})' as rule,
        count(*) as failing_rows
    from (
        select 1
        from {{ model }}
        group by {{ key | join(", ") }}
        having count(*) > 1
    ) as duplicates
),
{% endif %}

all_rules as (
    {% if checks %}
        select rule, failing_rows from broken
    {% endif %}
    {% if checks and key %} union all {% endif %}
    {% if key %}
        select rule, failing_rows from duplicated
    {% endif %}
    {% if not checks and not key %}
        select 'no rule' as rule, 0 as failing_rows
    {% endif %}
)

select rule, failing_rows
from all_rules
where failing_rows > 0
{% endtest %}

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
