{# What went wrong in a run, and when: one row per episode of a pattern, with
   its severity, evidence, hypotheses and summary. Each rule is a model of
   its own (int_finding_signals_<pattern>); int_run_findings holds the
   findings, built by run, and this is that table without its marks of how
   far each run was judged, with the metric audit's finding
   (int_metric_audit_findings). #}
with

findings as (
    select * from {{ ref('int_run_findings') }}
),

final as (
    select
        run_id,
        pattern,
        severity,
        first_step,
        last_step,
        flagged_steps,
        signals,
        evidence,
        hypotheses,
        summary
    from findings
    where pattern is not null
),

{# the metric audit's finding (logged_metric_disagrees), built apart #}
audit_findings as (
    select
        run_id,
        pattern,
        severity,
        first_step,
        last_step,
        flagged_steps,
        signals,
        evidence,
        hypotheses,
        summary
    from {{ ref('int_metric_audit_findings') }}
),

combined as (
    select
        run_id,
        pattern,
        severity,
        first_step,
        last_step,
        flagged_steps,
        signals,
        evidence,
        hypotheses,
        summary
    from final
    union all
    select
        run_id,
        pattern,
        severity,
        first_step,
        last_step,
        flagged_steps,
        signals,
        evidence,
        hypotheses,
        summary
    from audit_findings
)

select * from combined
