-- `obs rewards`: the run's reward quality scores and advice (fct_reward_quality).
select
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
where run_id = $run
