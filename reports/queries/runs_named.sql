-- The tracker runs whose display name is $name (a run given by its name).
select run_id
from dim_runs
where name = $name
