-- The runs with a row in fct_turn_advantages (reports/resolve.py: which runs hold
-- which kind of data).
select distinct run_id
from fct_turn_advantages
