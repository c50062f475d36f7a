-- `obs export curriculum`: the next run's dataset under $mode (fct_curriculum),
-- the kept prompts in order, then the dropped ones.
select
    prompt_hash,
    data_idx,
    prompt,
    weight,
    order_position as "order",
    reason,
    priority,
    difficulty_bucket,
    upsampling_score,
    upsampling_score_scaled,
    is_dropped
from fct_curriculum
where run_id = $run and mode = $mode
order by 11, 5, 1
