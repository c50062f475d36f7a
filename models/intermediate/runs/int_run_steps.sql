{{ config(incremental_by(['run_id'])) }}
{# One row per run and step: the canonical metrics side by side, so the
   run-analysis marts read `trajectories / rollout_time_s` on one row instead
   of joining the long history once per metric. Values are as logged (NaN and
   Infinity kept); the marts decide where a statistic needs finite values.
   Built by run, as int_metric_history: only runs that received points. #}
{%- set canonical_metrics = [
    'loss', 'kl', 'reward_mean', 'reward_std', 'grad_norm', 'entropy',
    'response_length', 'clip_ratio', 'zero_std_frac', 'step_time', 'learning_rate',
    'rollout_time_s', 'training_time_s', 'pipeline_overlap_s', 'trajectories',
    'extraction_rate', 'orders_expected', 'orders_extracted', 'empty_responses',
    'partial_responses', 'failed_rollouts', 'max_total_s', 'max_volume_reload_s',
    'cache_hit_rate', 'cache_total_hits', 'cache_total_queries', 'cache_prompt_tokens',
    'cumulative_compute', 'compute_per_step', 'reward_at_compute',
    'elo', 'win_rate', 'games_played', 'league_checkpoints', 'best_elo'
] %}
with

history as (
    {{ changed_runs(ref('int_metric_history'), ref('int_metric_history')) }}
),

pivoted as (
    select
        run_id,
        step,
        min(wall_time) as wall_time,
        max(run_parts) as run_parts,
        {%- for name in canonical_metrics %}
            max(value) filter (where canonical_metric = '{{ name }}') as {{ name }},
        {%- endfor %}
        {#- The evaluator's own step for league rows (a separate job resumes the
            run and logs at unrelated steps); `elo/evaluation_step` wins. #}
        coalesce(
            max(value) filter (where metric = 'elo/evaluation_step'),
            max(value) filter (where metric = 'elo/step')
        ) as evaluation_step
    from history
    group by 1, 2
),

final as (
    select
        run_id,
        step,
        wall_time,
        run_parts,
        {%- for name in canonical_metrics %}
            {{ name }},
        {%- endfor %}
        case when {{ is_finite('evaluation_step') }} then cast(evaluation_step as bigint) end
            as evaluation_step
    from pivoted
)

select * from final
