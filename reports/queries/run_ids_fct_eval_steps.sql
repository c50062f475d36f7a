-- The runs with a row in fct_eval_steps (reports/resolve.py: which runs hold
-- which kind of data).
select distinct run_id
from fct_eval_steps
