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
        'reward ~ ' || cast(round(prefactor, 5) as varchar) || ' * compute^'
        || cast(round(exponent, 3) as varchar) || ' (r_squared '
        || cast(round(r_squared, 3) as varchar) || ' over ' || n_used || ' points, '
        || n_excluded || ' non-positive excluded)' as phrase,
        [
            { 'key': 'exponent', 'value': exponent },
            { 'key': 'prefactor', 'value': prefactor },
            { 'key': 'r_squared', 'value': r_squared },
            { 'key': 'n_used', 'value': cast(n_used as double) },
            { 'key': 'n_excluded', 'value': cast(n_excluded as double) },
            { 'key': 'target_reward', 'value': target_reward },
            { 'key': 'compute_for_target', 'value': compute_for_target }
        ] as measures
    from power_law
    where exponent is not null
),

final as (
    select
        signals.*,
        judged_runs.run_parts
    from signals
    inner join judged_runs using (run_id)
    union all by name
    {#- one row per run judged, pattern null: how far it was judged #}
    select
        run_id,
        run_parts
    from judged_runs
)

select * from final
