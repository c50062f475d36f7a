-- The build's thresholds the run report draws (rpt_run_settings: the dbt vars
-- the marts used), one row.
select * from rpt_run_settings  -- noqa: AM04
