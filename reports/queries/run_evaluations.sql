-- `obs analyze`: the run's latest evaluation against each opponent.
select
    opponent,
    step,
    win_rate,
    survival_rate,
    avg_centers
from fct_eval_results
where run_id = $run and is_latest
order by 1
