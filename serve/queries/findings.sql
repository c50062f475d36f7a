-- The findings of every run (or of one), the most severe first.
select
    run_id,
    pattern,
    severity,
    first_step,
    last_step,
    flagged_steps,
    summary,
    case severity when 'critical' then 0 when 'warning' then 1 else 2 end
        as severity_rank
from fct_run_findings
where $run is null or run_id = $run
order by 8, 1, 4
