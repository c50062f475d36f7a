-- `obs agent advantages`: the groups with turn advantages at the run's iteration.
select distinct group_id
from fct_turn_advantages
where run_id = $run and iteration = $iteration
