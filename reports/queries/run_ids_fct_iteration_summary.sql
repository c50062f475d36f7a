-- The runs with a row in fct_iteration_summary (reports/resolve.py: which runs hold
-- which kind of data).
select distinct run_id
from fct_iteration_summary
