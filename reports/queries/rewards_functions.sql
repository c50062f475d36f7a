-- `obs rewards`: the run's reward functions by importance, the first $cap, and
-- how many there are in all (functions_total).
select
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
    count(*) over () as functions_total
from fct_reward_function_importance
where run_id = $run
order by 2
limit $cap
