-- `obs export buckets`: one row per problem of the run's iteration (a prompt,
-- keyed by its data_idx when $by_data_idx, else by its prompt_hash), its
-- bucket under $strategy and its metrics. The data_idx of a prompt comes from
-- staging, as in export_problem_key.sql.
with

keys as (
    select
        prompt_hash,
        min(data_idx) as data_idx
    from stg_rollouts
    where run_id = $run and iteration = $iteration
    group by 1
)

select
    buckets.bucket,
    -- every metric of fct_prompt_iteration
    metrics.*,  -- noqa: AM04
    case
        when $by_data_idx then cast(keys.data_idx as varchar)
        else keys.prompt_hash
    end as problem
from fct_prompt_iteration as metrics
inner join keys on metrics.prompt_hash = keys.prompt_hash
inner join fct_difficulty_buckets as buckets
    on
        metrics.run_id = buckets.run_id
        and metrics.iteration = buckets.iteration
        and metrics.prompt_hash = buckets.prompt_hash
        and buckets.strategy = $strategy
where metrics.run_id = $run and metrics.iteration = $iteration
order by  -- noqa: AM06
    case when $by_data_idx then keys.data_idx end asc,
    case when not $by_data_idx then keys.prompt_hash end asc
