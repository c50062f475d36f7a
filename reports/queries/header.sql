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

held_out as (
    -- the held-out metric shown first (rpt_run_held_out)
    select
        run_id,
        held_out_metric,
        held_out_first,
        held_out_last
    from rpt_run_held_out
    where list_contains($runs, run_id)
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
