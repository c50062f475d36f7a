{# The rule power_law_scaling: the run's reward follows a power of its
   compute (a run fit of int_power_law_fit); information, not a fault. #}
{{ finding_rule_start({
    'power_law_fits': ref('int_power_law_fit'),
}) }}
power_law as (
    select * from power_law_fits
    where scope = 'run'
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
)

{{ finding_rule_end() }}
