{# The rule prefix_cache_inefficiency: a low prefix-cache hit rate after the
   warm-up steps, or no cache metric at all in a run of the trainer that
   logs them (int_cache_stats). #}
{{ finding_rule_start({
    'stats': ref('int_metric_scores'),
    'cache_stats': ref('int_cache_stats'),
}) }}
signals as (
    select
        stats.run_id,
        'prefix_cache_inefficiency' as pattern,
        'low_hit_rate' as signal,
        stats.step as start_step,
        stats.step,
        2 as severity_rank,
        -stats.value as strength,
        'cache hit rate ' || cast({{ round_to('stats.value', 3) }} as string)
        || ' at step ' || stats.step
        || ' after warm-up, below ' || '{{ var("cache_hit_low") }}'
        || ' (run mean after warm-up '
        || cast({{ round_to('cache_stats.hit_rate_after_warmup', 3) }} as string) || ')'
            as phrase,
        {{ key_value_list([
            ("'hit_rate'", 'stats.value'),
            ("'cache_hit_low'", "cast(" ~ var('cache_hit_low') ~ " as double)"),
            ("'hit_rate_after_warmup'", 'cache_stats.hit_rate_after_warmup'),
            ("'avg_hit_rate'", 'cache_stats.avg_hit_rate'),
        ]) }} as measures
    from stats
    inner join cache_stats using (run_id)
    where
        stats.metric = 'cache_hit_rate'
        and stats.step >= cache_stats.first_step + {{ var('cache_warmup_steps') }}
        and stats.value < {{ var('cache_hit_low') }}
    union all
    select
        run_id,
        'prefix_cache_inefficiency' as pattern,
        'cache_disabled' as signal,
        first_step as start_step,
        last_step as step,
        1 as severity_rank,
        cast(0 as double) as strength,
        'no cache/* metric over steps ' || first_step || '-' || last_step
        || ' of a run that logs the rollout families: prefix caching looks off' as phrase,
        {{ key_value_list([
            ("'cache_data_points'", 'cast(0 as double)'),
        ]) }} as measures
    from cache_stats
    where not cache_enabled
)

{{ finding_rule_end() }}
