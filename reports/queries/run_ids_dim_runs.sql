-- The runs with a row in dim_runs (reports/resolve.py: which runs hold
-- which kind of data).
select distinct run_id
from dim_runs
