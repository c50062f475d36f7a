-- `obs export buckets`: every rollout of the run's iteration with its reward
-- and its problem's bucket under $strategy, in the problems' order. The
-- rollouts' texts are read from staging (stg_rollouts, a view over the lake):
-- no mart copies them (docs/architecture.md, "The read layer").
select
    stg_rollouts.data_idx,
    stg_rollouts.sample_idx,
    stg_rollouts.prompt_hash,
    case
        when $by_data_idx then cast(stg_rollouts.data_idx as varchar)
        else stg_rollouts.prompt_hash
    end as problem,
    stg_rollouts.iteration,
    stg_rollouts.prompt,
    stg_rollouts.response,
    stg_rollouts.score as reward,
    buckets.bucket,
    stg_rollouts.extra
from stg_rollouts
inner join fct_difficulty_buckets as buckets
    on
        stg_rollouts.run_id = buckets.run_id
        and stg_rollouts.iteration = buckets.iteration
        and stg_rollouts.prompt_hash = buckets.prompt_hash
        and buckets.strategy = $strategy
where stg_rollouts.run_id = $run and stg_rollouts.iteration = $iteration
order by  -- noqa: AM06
    case when $by_data_idx then stg_rollouts.data_idx end asc,
    case when not $by_data_idx then stg_rollouts.prompt_hash end asc,
    stg_rollouts.sample_idx asc
