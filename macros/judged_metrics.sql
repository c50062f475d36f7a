{% macro judged_metrics() %}
{#- The canonical metrics the findings judge point by point, as an SQL list:
    int_metric_scores scores them, int_run_findings counts a run's steps
    over them. -#}
(
    'loss', 'grad_norm', 'reward_mean', 'extraction_rate', 'empty_responses',
    'entropy', 'kl', 'clip_ratio', 'response_length', 'elo', 'cache_hit_rate',
    'max_total_s', 'max_volume_reload_s'
)
{%- endmacro %}
