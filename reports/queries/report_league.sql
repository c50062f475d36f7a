-- The run report's league chart: the run's Elo and win rate, step by step.
select
    step,
    elo,
    best_elo,
    win_rate
from fct_league
where run_id = $run
order by 1
