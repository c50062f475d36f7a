-- The run report: the canonical name of the held-out metric the run's reward
-- hacking verdict is judged against (its training chart draws it first).
select summary.canonical_metric
from fct_reward_hacking as hacking
inner join fct_metric_summary as summary
    on
        hacking.run_id = summary.run_id
        and hacking.performance_metric = summary.metric
where
    hacking.run_id = $run
    and hacking.scope = 'run'
    and hacking.reward_function is null
