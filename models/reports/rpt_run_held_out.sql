{# The held-out metric a run's numbers show first (the served home page's runs
   list and the dashboard header): the metric its reward hacking verdict is
   judged against (eval_accuracy or the var performance_metric), else (a run
   without reward data) its eval_accuracy; first and last value. #}

with

fct_reward_hacking as (
    select
        run_id,
        performance_metric
    from {{ ref('fct_reward_hacking') }}
    where
        scope = 'run'
        and reward_function is null
        and verdict <> 'no_performance_metric'
),

fct_metric_summary as (
    select
        run_id,
        metric,
        canonical_metric,
        first,
        last
    from {{ ref('fct_metric_summary') }}
),

held_out as (
    select
        fct_metric_summary.run_id,
        fct_metric_summary.metric as held_out_metric,
        fct_metric_summary.first as held_out_first,
        fct_metric_summary.last as held_out_last
    from fct_metric_summary
    left join fct_reward_hacking
        on fct_metric_summary.run_id = fct_reward_hacking.run_id
    where
        fct_metric_summary.metric = fct_reward_hacking.performance_metric
        or (
            fct_reward_hacking.run_id is null
            and fct_metric_summary.canonical_metric = 'eval_accuracy'
        )
)

select * from held_out
