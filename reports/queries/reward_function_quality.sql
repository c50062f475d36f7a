-- One row per run and reward function: its quality score and parts, the
-- lowest score first (null scores last); the run's 20 lowest (a run can log
-- thousands of functions; the rewards page says how many it shows).
select
    run_id,
    reward_function,
    basis,
    quality_score,
    consistency,
    discriminability,
    stability,
    coverage,
    issues,
    warnings,
    recommendations
from fct_reward_function_quality
where list_contains($runs, run_id)
qualify
    row_number() over (
        partition by run_id order by quality_score asc nulls last, reward_function asc
    ) <= 20
-- run, the lowest quality score first (null last), reward function
order by 1 asc, 4 asc nulls last, 2 asc
