-- One row per run and reward function: its importance over the run, by rank,
-- the first 20 (the rewards page's charts and `obs rewards`), and how many
-- functions the run has in all (functions_total: the page and the answer say
-- how many they show).
select
    run_id,
    reward_function,
    rank,
    weight,
    is_logged_only,
    contribution,
    impact_score,
    variability,
    mean,
    std,
    correlation_with_total,
    correlation_with_performance,
    basis,
    steps,
    n,
    count(*) over (partition by run_id) as functions_total
from fct_reward_function_importance
where list_contains($runs, run_id)
qualify rank <= 20
order by 1, 3, 2
