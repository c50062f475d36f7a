select
    run_id,
    iteration,
    n,
    mean_score,
    std_score,
    min_score,
    p05,
    p25,
    p50,
    p75,
    p95,
    max_score
from fct_score_distribution
where
    list_contains($runs, run_id)
    and ($iterations is null or list_contains($iterations, iteration))
order by 1, 2
