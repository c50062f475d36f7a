-- `obs summary`: the run's iterations, oldest first.
select
    iteration,
    n_prompts,
    n_rollouts,
    mean_score,
    solved_share,
    prompt_strict_acc,
    strict_success_rate,
    n_zero_variance_solved,
    n_zero_variance_failed
from fct_iteration_summary
where run_id = $run
order by 1
