{{ config(incremental_by(['run_id'])) }}
{# How bad each episode is, and whether it is worth reporting. An episode's
   severity is its worst signal's, except: a plateau (or saturation) with
   fewer than `plateau_min_windows` flat starting points is info; an
   episode made only of excursions (spikes judged against the series'
   noise) is a warning when it holds at least `instability_min_spikes` of
   them and the binomial chance of that many in its span at the run's own
   excursion rate, times the stretches of that length the run holds, is
   below `finding_alpha`, or when one of them (a timing one also at least
   `spike_min_ratio` x its trailing median) reaches greatest(
   `spike_z_warning`, 1.5 x the run's excursion level); else info, and then
   reported only beyond the excursion level.

   One row per reported episode (run, pattern and episode), and one per
   run judged with a null pattern whose run_parts says how far it was
   judged (macro changed_runs; see int_finding_runs). #}
{%- set spike_z_warning = var('spike_z_warning') -%}
{%- set excursion_signals -%}
    'loss_spike', 'grad_norm_spike', 'reward_swing', 'extraction_drop',
    'max_total_s_spike', 'max_volume_reload_s_spike'
{%- endset -%}
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

history as (
    {{ changed_runs(ref('int_metric_history'), ref('int_finding_runs')) }}
),

run_steps as (
    select distinct
        run_id,
        step
    from history
    where canonical_metric in {{ judged_metrics() }}
),

rolled_up as (
    select
        run_id,
        pattern,
        episode,
        min(start_step) as first_step,
        max(step) as last_step,
        count(distinct step) as flagged_steps,
        count(distinct step) filter (
            where signal in ({{ excursion_signals }})
        ) as excursion_steps,
        max(severity_rank) as severity_rank,
        max(strength) as strength,
        {#- The strongest excursion that may be a warning alone (a timing
            spike only when also spike_min_ratio x its trailing median). -#}
        max(strength) filter (
            where signal in ({{ excursion_signals }})
            and (
                signal not in ('max_total_s_spike', 'max_volume_reload_s_spike')
                or {{ list_element(
                    list_where('measures', 'm', "right(m.key, 6) = '_ratio'"), 1
                ) }}.value >= {{ var('spike_min_ratio') }}
            )
        ) as lone_strength,
        bool_and(signal in ({{ excursion_signals }})) as only_excursions,
        max(strength) filter (
            where signal in ('reward_plateau', 'elo_plateau', 'reward_mean_at_max')
        ) as flat_points
    from episodes
    group by 1, 2, 3
),

excursion_rates as (
    {#- How often the run shows an excursion of each pattern, over all its
        steps (with one added to each count, so a rate is never 0 or 1). -#}
    select
        run_id,
        rolled_up.pattern,
        (sum(rolled_up.excursion_steps) + 1.0) / (any_value(judged_runs.steps) + 2.0) as rate
    from rolled_up
    inner join judged_runs using (run_id)
    group by 1, 2
),

clusters as (
    {#- An episode of k excursions over m of the run's steps: the chance of
        k or more in m steps at the run's own rate (binomial), times the
        number of such stretches the run holds. Below `finding_alpha` the
        cluster is more than noise. -#}
    select
        rolled_up.run_id,
        rolled_up.pattern,
        rolled_up.episode,
        count(*) as span_steps,
        any_value(rolled_up.excursion_steps) as k,
        any_value(excursion_rates.rate) as rate,
        any_value(judged_runs.steps) as run_steps
    from rolled_up
    inner join excursion_rates using (run_id, pattern)
    inner join judged_runs using (run_id)
    inner join run_steps
        on
            rolled_up.run_id = run_steps.run_id
            and run_steps.step between rolled_up.first_step and rolled_up.last_step
    where rolled_up.excursion_steps >= {{ var('instability_min_spikes') }}
    group by 1, 2, 3
),

cluster_chances as (
    select
        *,
        least(
            1.0,
            {{ binomial_tail('k', 'greatest(span_steps, k)', 'rate') }}
            * run_steps / greatest(span_steps, k)
        ) as chance
    from clusters
),

judged as (
    select
        rolled_up.*,
        cluster_chances.chance as cluster_chance,
        judged_runs.excursion_z,
        case
            {# A plateau is a warning once enough points were flat. #}
            when
                rolled_up.pattern in ('performance_plateau', 'reward_saturation')
                and rolled_up.flat_points < {{ var('plateau_min_windows') }}
                and rolled_up.severity_rank = 2 then 1
            when rolled_up.only_excursions
                then
                    case
                        when cluster_chances.chance < {{ var('finding_alpha') }} then 2
                        when rolled_up.lone_strength >= greatest(
                            {{ spike_z_warning }}, 1.5 * judged_runs.excursion_z
                        ) then 2
                        else 1
                    end
            else rolled_up.severity_rank
        end as judged_rank
    {#- (a run whose only finding comes from another model, as a cache
        without metrics, may have no judged metric: no excursion level) #}
    from rolled_up
    left join judged_runs using (run_id)
    left join cluster_chances using (run_id, pattern, episode)
),

reported as (
    {#- Excursions that are neither a warning nor beyond what noise gives
        a run this long are not reported. -#}
    select
        run_id,
        pattern,
        episode,
        first_step,
        last_step,
        flagged_steps,
        judged_rank as severity_rank,
        cluster_chance
    from judged
    where not (judged_rank = 1 and only_excursions and strength <= excursion_z)
),

final as (
    select
        reported.*,
        judged_runs.run_parts
    from reported
    inner join judged_runs using (run_id)
    union all
    {#- one row per run judged, pattern null: how far it was judged #}
    {{ judged_run_marks([
        'pattern', 'episode', 'first_step', 'last_step', 'flagged_steps',
        'severity_rank', 'cluster_chance',
    ]) }}
)

select * from final
