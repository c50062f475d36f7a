-- One row per run: the dashboard header's numbers.
with summary as (
    select
        run_id,
        count(*) as iterations,
        min(iteration) as first_iteration,
        max(iteration) as last_iteration,
        sum(n_rollouts) as rollouts,
        arg_min(mean_score, iteration) as first_mean_score,
        arg_max(mean_score, iteration) as last_mean_score,
        arg_max(prompt_strict_acc, iteration) as last_strict_acc,
        -- solved under the build's success rule (var success)
        arg_max(solved_share, iteration) as last_solved_share,
        arg_max(zero_variance_share, iteration) as last_zero_variance_share,
        -- the scores' scale, and what "solved" counted (fct_iteration_summary.solved_by)
        min(min_score) as min_score,
        max(max_score) as max_score,
        min(min_success_value) as min_success_value,
        max(max_success_value) as max_success_value,
        case
            when any_value(solved_by) in ('score', 'function') then any_value(solved_by)
            when sum(n_judged_by_instructions) = 0 then 'pass_threshold'
            when sum(n_judged_by_instructions) = sum(n_rollouts) then 'instructions'
            else 'both'
        end as solved_by
    from fct_iteration_summary
    where
        list_contains($runs, run_id)
        and ($iterations is null or list_contains($iterations, iteration))
    group by 1
),

learning as (
    select
        run_id,
        count(*) as prompts,
        count(*) filter (where is_learned) as learned,
        count(*) filter (where num_forgetting_events > 0) as forgotten,
        count(*) filter (where is_plateau) as plateaued,
        count(*) filter (where is_stuck_solved or is_stuck_failed) as stuck
    from fct_prompt_learning
    where list_contains($runs, run_id)
    group by 1
),

judged as (
    -- the held-out metric reward hacking is judged against (eval_accuracy or
    -- the var performance_metric)
    select
        run_id,
        performance_metric
    from fct_reward_hacking
    where
        list_contains($runs, run_id)
        and scope = 'run'
        and reward_function is null
        and verdict <> 'no_performance_metric'
),

held_out as (
    -- that metric, else (a run without reward data) its eval_accuracy, first
    -- and last: shown first
    select
        history.run_id,
        history.metric as held_out_metric,
        history.first as held_out_first,
        history.last as held_out_last
    from fct_metric_summary as history
    left join judged on history.run_id = judged.run_id
    where
        list_contains($runs, history.run_id)
        and (
            history.metric = judged.performance_metric
            or (judged.run_id is null and history.canonical_metric = 'eval_accuracy')
        )
)

select
    summary.*,
    learning.prompts,
    learning.learned,
    learning.forgotten,
    learning.plateaued,
    learning.stuck,
    held_out.held_out_metric,
    held_out.held_out_first,
    held_out.held_out_last
from summary
inner join learning on summary.run_id = learning.run_id
left join held_out on summary.run_id = held_out.run_id
order by 1
