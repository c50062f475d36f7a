-- The run report's extraction chart: the run's extraction quality, step by step.
select
    step,
    extraction_rate,
    extracted_share
from fct_extraction_quality
where run_id = $run
order by 1
