{# The held-out metric reward hacking is judged against: one row per run and
   step where it was logged, with the key it was read from. One key per
   run, the first of:
   1. the var performance_metric, a key as logged or a canonical name
      (default eval_accuracy: every framework's held-out accuracy, through
      metric_aliases); a key named exactly before one of that canonical name;
   2. the held-out mean of a logged-only reward function (weight 0 in
      int_reward_weights: a check the user logs but does not train on), as
      TRL logs its eval split (`eval_rewards/{f}/mean`, `eval/rewards/{f}/mean`);
   3. an eval log's accuracy (eval_logs/eval_step_*.json, not its baseline).
   Non-finite values are left out. #}
with

history as (
    select
        run_id,
        step,
        metric,
        canonical_metric,
        value
    from {{ ref('int_metric_history') }}
    where {{ is_finite('value') }}
),

logged_only as (
    select
        run_id,
        reward_function
    from {{ ref('int_reward_weights') }}
    where is_logged_only
),

named as (
    select
        run_id,
        step,
        metric,
        value,
        case when metric = '{{ var("performance_metric") }}' then 1 else 2 end as choice
    from history
    where
        metric = '{{ var("performance_metric") }}'
        or canonical_metric = '{{ var("performance_metric") }}'
),

held_out_checks as (
    select
        history.run_id,
        history.step,
        history.metric,
        history.value,
        3 as choice
    from history
    inner join logged_only
        on
            history.run_id = logged_only.run_id
            and (
                history.metric = concat('eval_rewards/', logged_only.reward_function, '/mean')
                or history.metric = concat('eval/rewards/', logged_only.reward_function, '/mean')
            )
),

eval_logs as (
    select
        run_id,
        step,
        'eval_logs accuracy' as metric,
        max(accuracy) as value,
        4 as choice
    from {{ ref('stg_eval_steps') }}
    where not is_baseline and {{ is_finite('accuracy') }}
    group by 1, 2
),

candidates as (
    select * from named
    union all
    select * from held_out_checks
    union all
    select * from eval_logs
),

{# the run's key: the best choice, then the first key by name #}
chosen as (
    select
        run_id,
        metric
    from (
        select
            run_id,
            metric,
            row_number() over (partition by run_id order by min(choice), metric) as key_rank
        from candidates
        group by 1, 2
    ) as ranked
    where key_rank = 1
),

final as (
    select
        ---------- ids
        candidates.run_id,
        candidates.step,

        ---------- strings
        candidates.metric as performance_metric,

        ---------- numerics
        max(candidates.value) as performance
    from candidates
    inner join chosen
        on candidates.run_id = chosen.run_id and candidates.metric = chosen.metric
    group by 1, 2, 3
)

select * from final
