{{ config(incremental_by(['run_id'])) }}
{# The rule power_law_scaling: the run's reward follows a power of its
   compute (a run fit of int_power_law_fit); information, not a fault.

   One row per signal (a flagged step) of the runs judged, and one per run
   judged with a null pattern whose run_parts says how far it was judged
   (macro changed_runs; see int_finding_runs). The thresholds are dbt vars,
   described with the rule in fct_run_findings' documentation. #}
with

judged_runs as (
    {{ changed_runs(ref('int_finding_runs'), ref('int_finding_runs')) }}
),

power_law as (
    select run_fits.*
    from (
        {{ changed_runs(ref('int_power_law_fit'), ref('int_finding_runs')) }}
    ) as run_fits
    where run_fits.scope = 'run'
),

signals as (
    select
        run_id,
        'power_law_scaling' as pattern,
        'power_law_fit' as signal,
        first_step as start_step,
        last_step as step,
        1 as severity_rank,
        r_squared as strength,
        'reward ~ ' || cast({{ round_to('prefactor', 5) }} as string) || ' * compute^'
        || cast({{ round_to('exponent', 3) }} as string) || ' (r_squared '
        || cast({{ round_to('r_squared', 3) }} as string) || ' over ' || n_used || ' points, '
        || n_excluded || ' non-positive excluded)' as phrase,
        {{ key_value_list([
            ("'exponent'", 'exponent'),
            ("'prefactor'", 'prefactor'),
            ("'r_squared'", 'r_squared'),
            ("'n_used'", 'cast(n_used as double)'),
            ("'n_excluded'", 'cast(n_excluded as double)'),
            ("'target_reward'", 'target_reward'),
            ("'compute_for_target'", 'compute_for_target'),
        ]) }} as measures
    from power_law
    where exponent is not null
),

final as (
    select
        signals.*,
        judged_runs.run_parts
    from signals
    inner join judged_runs using (run_id)
    union all
    {#- one row per run judged, pattern null: how far it was judged #}
    {{ judged_run_marks([
        'pattern', 'signal', 'start_step', 'step', 'severity_rank', 'strength',
        'phrase', 'measures',
    ]) }}
)

select * from final
