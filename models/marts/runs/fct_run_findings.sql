{# What went wrong in a run, and when: one row per episode of a pattern, with
   its severity, evidence, hypotheses and summary. Each rule is a model of
   its own (int_finding_signals_<pattern>); int_run_findings holds the
   findings, built by run, and this is that table without its marks of how
   far each run was judged, with the metric audit's finding
   (int_metric_audit_findings), built apart. #}
{%- set columns = [
    'run_id', 'pattern', 'severity', 'first_step', 'last_step',
    'flagged_steps', 'signals', 'evidence', 'hypotheses', 'summary',
] %}
with

findings as (
    select * from {{ ref('int_run_findings') }}
),

audit_findings as (
    select * from {{ ref('int_metric_audit_findings') }}
),

combined as (
    select {{ columns | join(', ') }}
    from findings
    where pattern is not null
    union all
    select {{ columns | join(', ') }}
    from audit_findings
)

select * from combined
