-- `obs analyze`: the held-out metric the run's reward hacking verdict is
-- judged against, with the verdict.
select
    performance_metric,
    verdict,
    message
from fct_reward_hacking
where run_id = $run and scope = 'run' and reward_function is null
