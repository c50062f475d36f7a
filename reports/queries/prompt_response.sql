-- One rollout's whole response: the served prompt page's "whole text" link.
-- Read from staging (stg_rollouts, a view over the lake): no mart copies the
-- responses' text (docs/architecture.md, "The read layer").
select response
from stg_rollouts
where
    run_id = $run
    and prompt_hash = $prompt_hash
    and iteration = $iteration
    and sample_idx = $sample
