-- `obs export buckets`: the run's iterations with prompt metrics, oldest first.
select distinct iteration
from fct_prompt_iteration
where run_id = $run
order by 1
