-- The Python API (reports/dashboard.py, Dashboard): fct_reward_steps of every
-- run (or of one, $run), one row per run and step with reward data.
-- the API hands out the whole mart
select *  -- noqa: AM04
from fct_reward_steps
where $run is null or run_id = $run
-- by the run, then the mart's order
order by run_id, step  -- noqa: AM06
