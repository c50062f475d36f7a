{# The rule infrastructure_bottleneck: failed rollouts
   (int_rollout_reliability), and excursions of the slowest game's and the
   slowest volume reload's times (in log space; judged in
   int_finding_judgements). #}
{%- set spike_z = var('spike_z') -%}
{{ finding_rule_start({
    'stats': ref('int_metric_scores'),
    'reliability': ref('int_rollout_reliability'),
}) }}
signals as (
    select
        run_id,
        'infrastructure_bottleneck' as pattern,
        'failed_rollouts' as signal,
        step as start_step,
        step,
        2 as severity_rank,
        failed_rollouts as strength,
        cast(cast(round(failed_rollouts) as bigint) as string) || ' failed rollouts at step '
        || step as phrase,
        {{ key_value_list([
            ("'failed_rollouts'", 'failed_rollouts'),
        ]) }} as measures
    from reliability
    where is_failure
    union all
    {# The slowest game's and the slowest volume reload's time, in log
        space against their own noise (excursions, judged in
        int_finding_judgements: a lone one is a warning only when also
        spike_min_ratio x its trailing median). #}
    select
        run_id,
        'infrastructure_bottleneck' as pattern,
        metric || '_spike' as signal,
        step as start_step,
        step,
        1 as severity_rank,
        z as strength,
        case metric
            when 'max_total_s' then 'the slowest game took '
            else 'a volume reload took '
        end
        || cast({{ round_to('value', 2) }} as string) || ' s at step ' || step
        || ', z ' || cast({{ round_to('z', 1) }} as string) || ', '
        || cast({{ round_to(divide('value', 'trailing_median'), 1) }} as string)
        || 'x its trailing median '
        || cast({{ round_to('trailing_median', 2) }} as string) || ' s' as phrase,
        {{ key_value_list([
            ('metric', 'value'),
            ("metric || '_z'", 'z'),
            ("metric || '_ratio'", divide('value', 'trailing_median')),
            ("metric || '_trailing_median'", 'trailing_median'),
        ]) }} as measures
    from stats
    where metric in ('max_total_s', 'max_volume_reload_s') and z > {{ spike_z }}
)

{{ finding_rule_end() }}
