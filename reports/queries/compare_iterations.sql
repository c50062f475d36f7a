-- One row per run and iteration: the learning curves compared across runs.
select
    run_id,
    iteration,
    n_prompts,
    mean_score,
    -- the share of prompts solved under the build's success rule (var success)
    solved_share,
    zero_variance_share
from fct_iteration_summary
where
    list_contains($runs, run_id)
    and ($iterations is null or list_contains($iterations, iteration))
order by 1, 2
