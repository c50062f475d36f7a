-- The Python API (reports/dashboard.py, Dashboard): fct_upsampling_candidates
-- of every run (or of one, $run), the best candidate first.
-- the API hands out the whole mart
select *  -- noqa: AM04
from fct_upsampling_candidates
where $run is null or run_id = $run
order by run_id, upsampling_rank  -- noqa: AM06
