-- One row per run and reward function: its quality score and parts, the
-- lowest score first (null scores last).
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
-- run, the lowest quality score first (null last), reward function
order by 1 asc, 4 asc nulls last, 2 asc
