-- The stretches of steps where fct_reward_hacking judges the total reward
-- (reward_function null) high or medium: overlapping sliding windows of one
-- verdict merged into one stretch. A run too short for a window has its
-- whole-run verdict instead.
with judged as (
    select
        run_id,
        scope,
        verdict,
        window_start_step as start_step,
        window_end_step as end_step,
        suspected_functions
    from fct_reward_hacking
    where
        list_contains($runs, run_id)
        and reward_function is null
        and verdict in ('high', 'medium')
),

windowed_runs as (
    select distinct run_id
    from fct_reward_hacking
    where
        list_contains($runs, run_id)
        and reward_function is null
        and scope = 'window'
),

spans as (
    select judged.*
    from judged
    where
        judged.scope = 'window'
        or (
            judged.scope = 'run'
            and judged.run_id not in (select windowed_runs.run_id from windowed_runs)
        )
),

reached as (
    select
        *,
        max(end_step) over (
            partition by run_id, verdict
            order by start_step, end_step
            rows between unbounded preceding and 1 preceding
        ) as reach
    from spans
),

islands as (
    select
        *,
        sum(case when reach is null or start_step > reach then 1 else 0 end) over (
            partition by run_id, verdict
            order by start_step, end_step
            rows between unbounded preceding and current row
        ) as island
    from reached
)

select
    run_id,
    verdict,
    min(start_step) as start_step,
    max(end_step) as end_step,
    count(*) as windows,
    list_sort(list_distinct(flatten(
        list(suspected_functions) filter (where suspected_functions is not null)
    ))) as suspected_functions
from islands
-- (the island is not selected: no position to name it by)
group by run_id, verdict, island  -- noqa: AM06
-- run, start step, verdict
order by 1, 3, 2
