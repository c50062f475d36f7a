-- `obs compare`: the config values of $runs (fct_run_config), key by key.
select
    key,
    run_id,
    value
from fct_run_config
where list_contains($runs, run_id)
order by 1, 2
