-- The Python API (reports/dashboard.py, Dashboard): fct_prompt_learning of
-- every run (or of one, $run), one row per run and prompt.
-- the API hands out the whole mart
select *  -- noqa: AM04
from fct_prompt_learning
where $run is null or run_id = $run
order by all
