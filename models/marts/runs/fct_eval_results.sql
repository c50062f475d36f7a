{# Evaluation games against fixed opponents, one row per opponent and
   evaluation step, from the `eval/vs_{opponent}/{metric}` keys (which have no
   canonical name: the opponent is part of the key). #}
with

history as (
    select * from {{ ref('fct_metric_history') }}
),

parsed as (
    select
        run_id,
        step,
        regexp_extract(metric, '^eval/vs_(.+)/(win_rate|survival_rate|avg_centers)$', 1)
            as opponent,
        regexp_extract(metric, '^eval/vs_(.+)/(win_rate|survival_rate|avg_centers)$', 2)
            as eval_metric,
        value
    from history
    where {{ regexp_contains('metric', "'^eval/vs_(.+)/(win_rate|survival_rate|avg_centers)$'") }}
),

pivoted as (
    select
        run_id,
        step,
        opponent,
        max(value) filter (where eval_metric = 'win_rate') as win_rate,
        max(value) filter (where eval_metric = 'survival_rate') as survival_rate,
        max(value) filter (where eval_metric = 'avg_centers') as avg_centers
    from parsed
    group by 1, 2, 3
),

final as (
    select
        run_id,
        step,
        opponent,
        win_rate,
        survival_rate,
        avg_centers,
        step = max(step) over (partition by run_id) as is_latest
    from pivoted
)

select * from final
