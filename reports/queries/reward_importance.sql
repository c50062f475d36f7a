-- One row per run and reward function: its importance over the run, by rank
-- (the first 20; the page says how many the run has).
select
    run_id,
    rank,
    reward_function,
    basis,
    weight,
    is_logged_only,
    contribution,
    impact_score,
    variability,
    mean,
    std,
    correlation_with_total,
    correlation_with_performance
from fct_reward_function_importance
where list_contains($runs, run_id) and rank <= 20
order by 1, 2, 3
