-- The findings of every run (or of one), the most severe first.
select
    run_id,
    pattern,
    severity,
    first_step,
    last_step,
    flagged_steps,
    summary
from fct_run_findings
where $run is null or run_id = $run
order by
    case severity when 'critical' then 0 when 'warning' then 1 else 2 end,
    run_id,
    first_step
