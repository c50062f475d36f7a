{{ config(incremental_by(['run_id'])) }}
{# Signals of one pattern closer than `finding_episode_gap` steps make one
   episode (gaps and islands): each signal of the runs judged with its
   episode's number, from 1 in each run and pattern.

   One row per signal, and one per run judged with a null pattern whose
   run_parts says how far it was judged (macro changed_runs; see
   int_finding_runs). #}
with

judged_runs as (
    {{ changed_runs(ref('int_finding_runs'), ref('int_finding_runs')) }}
),

signals as (
    {{ changed_runs(ref('int_finding_signals'), ref('int_finding_runs')) }}
),

reach as (
    {# Gaps and islands: a signal starts a new episode when it begins more
       than finding_episode_gap steps after everything before it ended. #}
    select
        *,
        max(step) over (
            partition by run_id, pattern order by start_step, step, signal
            rows between unbounded preceding and 1 preceding
        ) as reached_before
    from signals
),

episodes as (
    select
        *,
        sum(
            case
                when
                    reached_before is null
                    or start_step > reached_before + {{ var('finding_episode_gap') }}
                    then 1
                else 0
            end
        ) over (
            partition by run_id, pattern order by start_step, step, signal
            rows between unbounded preceding and current row
        ) as episode
    from reach
),

final as (
    select
        episodes.run_id,
        episodes.pattern,
        episodes.signal,
        episodes.start_step,
        episodes.step,
        episodes.episode,
        episodes.severity_rank,
        episodes.strength,
        episodes.phrase,
        episodes.measures,
        judged_runs.run_parts
    from episodes
    inner join judged_runs using (run_id)
    union all
    {#- one row per run judged, pattern null: how far it was judged #}
    {{ judged_run_marks([
        'pattern', 'signal', 'start_step', 'step', 'episode', 'severity_rank',
        'strength', 'phrase', 'measures',
    ]) }}
)

select * from final
