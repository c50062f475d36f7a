-- One row per run: the reward quality score, its four parts and the advice
-- (the rewards page's quality tab, and `obs rewards` for one run).
select
    run_id,
    basis,
    steps,
    reward_functions,
    quality_score,
    consistency,
    discriminability,
    stability,
    coverage,
    issues,
    warnings,
    recommendations
from fct_reward_quality
where list_contains($runs, run_id)
order by 1
