-- `obs rewards`: how many reward steps the run has, and the latest step's basis.
select
    count(*) as steps,
    any_value(basis order by step desc) as basis
from fct_reward_steps
where run_id = $run
