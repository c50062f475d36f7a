-- `obs analyze`: the run's extraction quality over its steps, over finite
-- values only; `steps` counts the steps with a rate.
with

extraction as (
    select
        step,
        case
            when isfinite(extraction_rate) then extraction_rate
        end as extraction_rate,
        is_below_target,
        case
            when isfinite(extraction_gap) then extraction_gap
        end as extraction_gap,
        case
            when isfinite(orders_expected) then orders_expected
        end as orders_expected,
        case
            when isfinite(empty_responses) then empty_responses
        end as empty_responses,
        case
            when isfinite(partial_responses) then partial_responses
        end as partial_responses
    from fct_extraction_quality
    where run_id = $run
)

select
    count(extraction_rate) as steps,
    avg(extraction_rate) as mean_rate,
    min(extraction_rate) as min_rate,
    arg_max(extraction_rate, step) as last_rate,
    count(*) filter (where is_below_target) as steps_below_target,
    sum(extraction_gap) as total_gap,
    sum(extraction_gap) / nullif(sum(orders_expected), 0) as gap_share,
    sum(empty_responses) as empty_responses,
    sum(partial_responses) as partial_responses
from extraction
