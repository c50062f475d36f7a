-- The reward alerts (fct_alerts) of every run (or of one, $run), at or above a
-- level ($level_rank: info 1 to critical 4) and from a step on ($since_step,
-- every step when null): each run's oldest first, the most severe first within
-- a step. `obs alerts`, `obs watch`, the reward answers and the served pages.
select
    run_id,
    step,
    rule_name,
    kind,
    metric,
    level,
    level_rank,
    message,
    value,
    threshold
from fct_alerts
where
    level_rank >= $level_rank
    and ($run is null or run_id = $run)
    and ($since_step is null or step >= $since_step)
order by 1 asc, 2 asc, 7 desc, 3 asc
