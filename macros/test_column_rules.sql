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
