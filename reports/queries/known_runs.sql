-- The command line: which of $names name runs (their ids or names).
select
    run_id,
    name
from dim_runs
where list_contains($names, run_id) or list_contains($names, name)
