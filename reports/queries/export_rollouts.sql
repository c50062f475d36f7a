-- `obs export buckets`: every rollout of the run's iteration with its reward,
-- keyed by its problem (the key export_problems.sql gives it), in the problems'
-- order; the export adds each problem's bucket from export_problems' rows. The
-- rollouts' texts are read from staging (stg_rollouts, a view over the lake):
-- no mart copies them (docs/architecture.md, "The read layer").
select
    data_idx,
    sample_idx,
    prompt_hash,
    case
        when $by_data_idx then cast(data_idx as varchar)
        else prompt_hash
    end as problem,
    iteration,
    prompt,
    response,
    score as reward,
    extra
from stg_rollouts
where run_id = $run and iteration = $iteration
order by  -- noqa: AM06
    case when $by_data_idx then data_idx end asc,
    case when not $by_data_idx then prompt_hash end asc,
    sample_idx asc
