-- The run report's power law chart: each step's positive reward against its
-- positive cumulative compute.
with

points as (
    select
        step,
        cumulative_compute as c,
        coalesce(reward_at_compute, reward_mean) as r
    from int_run_steps
    where run_id = $run
)

select * from points
where c > 0 and r > 0
order by 1
