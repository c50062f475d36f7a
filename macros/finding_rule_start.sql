{% macro finding_rule_start(reads) %}
{#- The opening of a finding rule's model (int_finding_signals_<pattern>),
    whose own CTEs follow it, the last named `signals` (run_id, pattern,
    signal, start_step, step, severity_rank, strength, phrase, measures:
    one row per flagged step), and whose last line is finding_rule_end.
    It sets the config every rule shares (incremental by run, and the tag
    finding_rule: int_finding_signals checks its rules against it,
    rpt_finding_shades and int_run_findings read their yml entries' meta)
    and opens the `with`: `judged_runs`, int_finding_runs' rows of the runs
    whose history changed since the model judged them (macro changed_runs;
    the rule's CTEs may read its excursion level), then one CTE per entry of
    `reads` (CTE name: relation), the relation's rows of those runs. -#}
    {%- if reads is not mapping -%}
        {{ exceptions.raise_compiler_error("finding_rule_start: reads maps CTE names to relations") }}
    {%- endif -%}
    {{ config(incremental_by(['run_id'])) }}
    {{ config(tags=['finding_rule']) }}
with

judged_runs as (
    {{ changed_runs(ref('int_finding_runs'), ref('int_finding_runs')) }}
),
{%- for name, relation in reads.items() %}

{{ name }} as (
    {{ changed_runs(relation, ref('int_finding_runs')) }}
),
{%- endfor %}
{% endmacro %}
