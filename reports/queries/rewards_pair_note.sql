-- `obs rewards`: why the run's pair of reward functions was chosen.
select note
from fct_reward_pair_selection
where run_id = $run
