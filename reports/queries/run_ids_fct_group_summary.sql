-- The runs with an agent's group summaries (reports/resolve.py): a group
-- summary with only times or tokens (any trainer's train/* keys) is no agent's.
select distinct run_id
from fct_group_summary
where basis is not null
