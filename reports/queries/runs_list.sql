-- `obs runs`: the tracker runs matching every filter given (a null one matches
-- every run): $project, $tag, $state, and each config key of $config_keys with
-- the value at the same place of $config_values (compared as numbers when both
-- are; a dotted key finds a flattened key whose name holds the dots too).
with

wanted_config as (
    select
        unnest($config_keys) as key,
        unnest($config_values) as value
),

runs as (
    select
        run_id,
        name,
        state,
        source,
        sources,
        project,
        tags,
        created_at,
        created_from,
        last_landed_at,
        steps,
        last_step,
        metrics
    from dim_runs
    where
        ($project is null or project = $project)
        and ($tag is null or list_contains(tags, $tag))
        and ($state is null or state = $state)
)

select runs.*  -- noqa: AM04
from runs
where not exists (
    select 1 as found
    from wanted_config
    where not exists (
        select 1 as found
        from fct_run_config
        where
            fct_run_config.run_id = runs.run_id
            and (
                fct_run_config.key = wanted_config.key
                or replace(fct_run_config.key, '"', '') = wanted_config.key
            )
            and (
                fct_run_config.value = wanted_config.value
                or try_cast(fct_run_config.value as double)
                = try_cast(wanted_config.value as double)
            )
    )
)
