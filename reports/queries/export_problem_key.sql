-- `obs export buckets`: whether the run's rollouts of the iteration carry a
-- data_idx (the problems are then keyed by it, else by their prompt_hash).
-- Read from staging with the rollouts themselves (export_rollouts.sql): no
-- mart keeps a rollout's data_idx (docs/architecture.md, "The read layer").
select count(data_idx) > 0 as by_data_idx
from stg_rollouts
where run_id = $run and iteration = $iteration
