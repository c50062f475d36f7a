{# The rows of fct_cache_stats (a view of this table).
   The prefix cache of each run in one row: how often prompts hit it, how
   that moved, and what it saved. A run counts as having the cache on when it
   logged any `cache/*` key; a run of the same trainer (it logs the rollout,
   extraction or power-law families) with no cache key gets a row with the
   cache off, because a missing cache is itself a finding. Totals are the
   last logged values (the trainer logs them cumulatively). #}
{#- exact: it meets cache_hit_good and cache_hit_low (status) #}
{%- set judged_rate = exact_float(
    'coalesce(hit_rate_after_warmup, avg_hit_rate, overall_hit_rate)'
) -%}
with

history as (
    select * from {{ ref('int_metric_history') }}
),

seed_003_runs as (
    {# Runs of the trainer that logs the cache (its rollout, extraction and
       power-law families), with the steps those cover. #}
    select
        run_id,
        min(step) as first_step,
        max(step) as last_step
    from history
    where
        canonical_metric in (
            'rollout_time_s', 'training_time_s', 'pipeline_overlap_s', 'trajectories',
            'extraction_rate', 'orders_expected', 'orders_extracted', 'empty_responses',
            'partial_responses', 'failed_rollouts', 'max_total_s', 'max_volume_reload_s',
            'cumulative_compute', 'compute_per_step', 'reward_at_compute'
        )
    group by 1
),

cache_points as (
    select
        run_id,
        step,
        metric,
        canonical_metric,
        value
    from history
    where metric like 'cache/%'
),

cache_runs as (
    select
        run_id,
        min(step) as first_step,
        max(step) as last_step
    from cache_points
    group by 1
),

hit_rates as (
    select
        cache_points.run_id,
        cache_points.step,
        cache_points.value as hit_rate,
        cache_points.step >= cache_runs.first_step + {{ var('cache_warmup_steps') }}
            as is_after_warmup
    from cache_points
    inner join cache_runs using (run_id)
    where
        cache_points.canonical_metric = 'cache_hit_rate'
        and {{ is_finite('cache_points.value') }}
),

hit_rate_stats as (
    select
        run_id,
        count(*) as data_points,
        avg(hit_rate) as avg_hit_rate,
        {{ arg_max('hit_rate', 'step') }} as final_hit_rate,
        max(hit_rate) as peak_hit_rate,
        avg(hit_rate) filter (where is_after_warmup) as hit_rate_after_warmup,
        {{ regression_slope('hit_rate', 'step') }} as hit_rate_slope
    from hit_rates
    group by 1
),

totals as (
    {# Last finite value of each cumulative counter. #}
    select
        run_id,
        {{ arg_max('value', 'step') }} filter (where canonical_metric = 'cache_total_hits')
            as total_cache_hits,
        {{ arg_max('value', 'step') }} filter (where canonical_metric = 'cache_total_queries')
            as total_cache_queries,
        {{ arg_max('value', 'step') }} filter (where canonical_metric = 'cache_prompt_tokens')
            as total_prompt_tokens
    from cache_points
    where {{ is_finite('value') }}
    group by 1
),

runs as (
    select run_id from cache_runs
    union
    select run_id from seed_003_runs
),

joined as (
    select
        runs.run_id,
        cache_runs.run_id is not null as cache_enabled,
        coalesce(cache_runs.first_step, seed_003_runs.first_step) as first_step,
        coalesce(cache_runs.last_step, seed_003_runs.last_step) as last_step,
        coalesce(hit_rate_stats.data_points, 0) as data_points,
        hit_rate_stats.avg_hit_rate,
        hit_rate_stats.final_hit_rate,
        hit_rate_stats.peak_hit_rate,
        hit_rate_stats.hit_rate_after_warmup,
        case
            when totals.total_cache_queries > 0
                then totals.total_cache_hits / totals.total_cache_queries
        end as overall_hit_rate,
        totals.total_cache_hits,
        totals.total_cache_queries,
        totals.total_prompt_tokens,
        hit_rate_stats.avg_hit_rate * totals.total_prompt_tokens as estimated_tokens_saved,
        hit_rate_stats.hit_rate_slope
    from runs
    left join cache_runs using (run_id)
    left join seed_003_runs using (run_id)
    left join hit_rate_stats using (run_id)
    left join totals using (run_id)
),

final as (
    select
        *,
        case
            when not cache_enabled then 'disabled'
            when {{ judged_rate }} >= {{ var('cache_hit_good') }} then 'good'
            when {{ judged_rate }} < {{ var('cache_hit_low') }} then 'low'
            when {{ judged_rate }} is not null then 'ok'
        end as status
    from joined
)

select * from final
