-- `obs agent groups`: the run's rows of fct_group_summary, oldest first.
-- every column: the answer shows the whole row
select *  -- noqa: AM04
from fct_group_summary
where run_id = $run
order by iteration  -- noqa: AM06
