-- `obs analyze`: the three runs sharing the most config values with the run.
with

mine as (
    select
        key,
        value
    from fct_run_config
    where run_id = $run
),

others as (
    select
        fct_run_config.run_id,
        count(*) filter (where fct_run_config.value = mine.value) as same,
        count(*) filter (where fct_run_config.value <> mine.value) as different
    from fct_run_config
    inner join mine on fct_run_config.key = mine.key
    where fct_run_config.run_id <> $run
    group by 1
)

select
    run_id,
    same,
    different
from others
where same > 0
order by 2 desc, 3 asc, 1 asc
limit 3
