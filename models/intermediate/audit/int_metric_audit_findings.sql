{# The audit's finding: one row per run where a logged metric disagrees
   with its rollouts, pattern `logged_metric_disagrees`, in the columns of
   fct_run_findings (which unions it with the other rules' findings).
   Critical when the reward itself (reward_mean) disagrees, else warning.
   The evidence names each disagreeing key with its steps and worst
   difference; the hypotheses are the causes the metric_audit_causes seed
   lists for the disagreeing metrics, in metric then position order. #}
with

audit as (
    select * from {{ ref('int_metric_audit_steps') }}
),

causes as (
    select * from {{ ref('metric_audit_causes') }}
),

disagreeing as (
    select
        run_id,
        metric,
        canonical_metric,
        {{ ordered_list('step', ['step']) }} as steps,
        min(step) as first_step,
        max(step) as last_step,
        max(difference) as worst_difference,
        {{ arg_max('step', 'difference') }} as worst_step
    from audit
    where verdict = 'disagrees'
    group by 1, 2, 3
),

disagreeing_metrics as (
    select distinct
        run_id,
        canonical_metric
    from disagreeing
),

run_causes as (
    select
        disagreeing_metrics.run_id,
        {{ ordered_list('causes.cause', ['causes.canonical_metric', 'causes.position']) }}
            as hypotheses
    from disagreeing_metrics
    inner join causes on disagreeing_metrics.canonical_metric = causes.canonical_metric
    group by 1
),

run_steps as (
    select
        run_id,
        count(distinct step) as flagged_steps
    from audit
    where verdict = 'disagrees'
    group by 1
),

by_run as (
    select
        run_id,
        min(first_step) as first_step,
        max(last_step) as last_step,
        bool_or(canonical_metric = 'reward_mean') as has_reward_disagreement,
        {{ ordered_list("metric || '_disagrees'", ['metric']) }} as signals,
        {#- one key per metric, in metric order: json_group_object keeps the
            order rows arrive in, which changes between builds, and the
            evidence must not #}
        {{ as_json(
            "'{' || " ~ ordered_string_agg(
                json_string('metric') ~ " || ':' || " ~ json_object_of([
                    ('steps', 'steps', 'bigint_list'),
                    ('worst_step', 'worst_step', 'bigint'),
                    ('worst_difference', 'worst_difference', 'double'),
                ]),
                "','",
                ['metric'],
            ) ~ " || '}'"
        ) }} as metric_evidence,
        {{ ordered_string_agg(
            "metric || ' at step' || case when " ~ list_size('steps')
            ~ " > 1 then 's ' else ' ' end || " ~ list_join('steps', "', '"),
            "'; '",
            ['metric'],
        ) }} as details
    from disagreeing
    group by 1
),

final as (
    select
        by_run.run_id,
        'logged_metric_disagrees' as pattern,
        case when by_run.has_reward_disagreement then 'critical' else 'warning' end as severity,
        by_run.first_step,
        by_run.last_step,
        run_steps.flagged_steps,
        by_run.signals,
        {{ json_object_of([
            ('flagged_steps', 'run_steps.flagged_steps', 'bigint'),
            ('metrics', 'by_run.metric_evidence', 'json'),
        ]) }} as evidence,
        coalesce(run_causes.hypotheses, {{ empty_list('varchar') }}) as hypotheses,
        'Logged metrics disagree with the rollouts: ' || by_run.details || '.' as summary
    from by_run
    inner join run_steps on by_run.run_id = run_steps.run_id
    left join run_causes on by_run.run_id = run_causes.run_id
)

select * from final
