-- `obs agent eval`: the run's rows of fct_eval_steps, the baselines first.
-- every column: the answer shows the whole row
select *  -- noqa: AM04
from fct_eval_steps
where run_id = $run
order by is_baseline desc, step asc  -- noqa: AM06
