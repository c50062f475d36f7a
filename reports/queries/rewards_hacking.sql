-- `obs rewards`: the run's reward hacking verdicts of one scope ($scope: the
-- whole run, or its windows), the total reward's first, then by window.
select
    reward_function,
    scope,
    window_start_step,
    window_end_step,
    performance_metric,
    verdict,
    seed_verdict,
    suspected_functions,
    message,
    points,
    reward_points,
    reward_slope,
    performance_slope,
    reward_t,
    performance_t
from fct_reward_hacking
where run_id = $run and scope = $scope
order by 1 asc nulls first, 4 asc
