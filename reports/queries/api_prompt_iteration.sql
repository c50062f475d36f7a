-- The Python API (reports/dashboard.py, Dashboard): fct_prompt_iteration of
-- every run (or of one, $run), one row per run, iteration and prompt.
-- the API hands out the whole mart
select *  -- noqa: AM04
from fct_prompt_iteration
where $run is null or run_id = $run
order by all
