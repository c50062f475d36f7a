-- `obs agent advantages`: the run's iterations with turn advantages.
select distinct iteration
from fct_turn_advantages
where run_id = $run
order by 1
