-- The runs with a row in fct_turn_summary (reports/resolve.py: which runs hold
-- which kind of data; the agent page's runs).
select distinct run_id
from fct_turn_summary
