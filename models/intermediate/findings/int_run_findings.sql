{{ config(incremental_by(['run_id'])) }}
{# What went wrong in a run, and when, as rows a person can act on: each
   reported episode (int_finding_judgements) with its severity, its
   evidence as numbers (each signal's strongest point's, to 8 significant
   digits), the `finding_hypotheses` seed's hypotheses and one sentence
   saying what was seen. The rules are one model each
   (int_finding_signals_<pattern>), their signals make episodes in
   int_finding_episodes, which int_finding_judgements judges.

   Built by run: a build judges again only the runs whose history changed
   since the last one (macro changed_runs), and every run judged leaves one
   row with a null pattern, whose `run_parts` tells the next build how far
   it was judged (a run with no finding would otherwise be judged again at
   every build). fct_run_findings is this table without those rows. #}
with

judged_runs as (
    {{ changed_runs(ref('int_finding_runs'), ref('int_finding_runs')) }}
),

episodes as (
    select run_episodes.*
    from (
        {{ changed_runs(ref('int_finding_episodes'), ref('int_finding_runs')) }}
    ) as run_episodes
    where run_episodes.pattern is not null
),

reported as (
    select judgements.*
    from (
        {{ changed_runs(ref('int_finding_judgements'), ref('int_finding_runs')) }}
    ) as judgements
    where judgements.pattern is not null
),

hypotheses as (
    select * from {{ ref('finding_hypotheses') }}
),

signal_counts as (
    select
        run_id,
        pattern,
        episode,
        signal,
        min(start_step) as signal_first_step,
        count(distinct step) as signal_steps
    from episodes
    group by 1, 2, 3, 4
),

representatives as (
    {# Each signal's strongest point (a plateau's first window) stands for it
       in the evidence and the sentence. #}
    select
        run_id,
        pattern,
        episode,
        signal,
        start_step,
        step,
        severity_rank,
        strength,
        phrase,
        measures,
        signal_first_step,
        signal_steps
    from (
        select
            episodes.*,
            signal_counts.signal_first_step,
            signal_counts.signal_steps,
            row_number() over (
                partition by episodes.run_id, episodes.pattern, episodes.episode, episodes.signal
                order by episodes.strength desc nulls last, episodes.step asc
            ) as strength_rank
        from episodes
        inner join signal_counts using (run_id, pattern, episode, signal)
    ) as ranked
    where strength_rank = 1
),

measures as (
    select
        unnested.run_id,
        unnested.pattern,
        unnested.episode,
        unnested.measure.key,
        unnested.measure.value
    from (
        select
            run_id,
            pattern,
            episode,
            {{ explode_list('measures') }} as measure
        from representatives
    ) as unnested
    union all
    select
        run_id,
        pattern,
        episode,
        signal || '_steps' as key,
        cast(signal_steps as double) as value
    from representatives
),

evidence as (
    select
        run_id,
        pattern,
        episode,
        {{ json_number_map('key', 'value') }} as evidence
    from (
        {#- Evidence is for reading: 8 significant digits (the full numbers are
            in the marts each finding reads), which also keeps it the same
            whatever order a parallel sum added in. -#}
        select
            run_id,
            pattern,
            episode,
            key,
            case
                when max(value) = 0 then 0.0
                else {{ round_to(
                    'max(value)', '7 - cast(floor(log10(abs(max(value)))) as integer)'
                ) }}
            end as value
        from measures
        where value is not null and {{ is_finite('value') }}
        group by 1, 2, 3, 4
    )
    group by 1, 2, 3
),

described as (
    select
        run_id,
        pattern,
        episode,
        {{ ordered_string_agg(
            "phrase || case when signal_steps > 1 then ' (' || signal_steps"
            ~ " || ' flagged steps)' else '' end",
            "'; '",
            ['signal_first_step', 'signal'],
        ) }} as details,
        {{ ordered_list('signal', ['signal_first_step', 'signal']) }} as signals
    from representatives
    group by 1, 2, 3
),

pattern_hypotheses as (
    select
        pattern,
        {{ ordered_list('hypothesis', ['position']) }} as hypotheses
    from hypotheses
    group by 1
),

labels as (
    {# Each pattern's title, as its rule's yml entry declares it (meta
       labels, macro finding_rules_meta). #}
    select
        labels.pattern,
        labels.label
    from (
        values
        {%- for pattern, label in finding_rules_meta('labels') | dictsort %}
            ('{{ pattern }}', '{{ label }}'){{ "," if not loop.last }}
        {%- endfor %}
    ) as labels (pattern, label)
),

final as (
    select
        reported.run_id,
        reported.pattern,
        case reported.severity_rank
            when 3 then 'critical'
            when 2 then 'warning'
            else 'info'
        end as severity,
        reported.first_step,
        reported.last_step,
        reported.flagged_steps,
        described.signals,
        {{ json_merge([
            json_object_of([('flagged_steps', 'reported.flagged_steps', 'bigint')]),
            'case when reported.cluster_chance is not null then '
            ~ json_object_of([('cluster_chance', round_to(
                'reported.cluster_chance',
                '2 - cast(floor(log10(greatest(reported.cluster_chance, 1e-300))) as integer)'
            ), 'double')])
            ~ ' else ' ~ json_object_of([]) ~ ' end',
            'coalesce(evidence.evidence, ' ~ json_object_of([]) ~ ')',
        ]) }} as evidence,
        coalesce(pattern_hypotheses.hypotheses, {{ empty_list('varchar') }}) as hypotheses,
        labels.label || case
            when reported.first_step = reported.last_step
                then ' at step ' || reported.first_step
            else ' at steps ' || reported.first_step || '-' || reported.last_step
        end || ': ' || described.details || '.' as summary,
        judged_runs.run_parts
    from reported
    inner join described using (run_id, pattern, episode)
    left join evidence using (run_id, pattern, episode)
    left join pattern_hypotheses using (pattern)
    left join labels using (pattern)
    inner join judged_runs using (run_id)
),

marked as (
    select * from final
    union all
    {#- one row per run judged, pattern null: how far it was judged #}
    {{ judged_run_marks([
        'pattern', 'severity', 'first_step', 'last_step', 'flagged_steps', 'signals',
        'evidence', 'hypotheses', 'summary',
    ]) }}
)

select * from marked
