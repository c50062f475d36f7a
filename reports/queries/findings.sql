-- The findings (fct_run_findings) of every run (or of one, $run) at or above a
-- severity ($severity_rank: 0 critical only, 1 warnings too, 2 every one): run
-- by run, the most severe first, then by their first step. `obs findings`, the
-- findings section of `obs analyze` and the run report, the served pages.
with

findings as (
    select
        run_id,
        pattern,
        severity,
        first_step,
        last_step,
        flagged_steps,
        signals,
        evidence,
        hypotheses,
        summary,
        case severity when 'critical' then 0 when 'warning' then 1 else 2 end
            as severity_rank
    from fct_run_findings
)

select * from findings
where ($run is null or run_id = $run) and severity_rank <= $severity_rank
order by 1, 11, 4
