-- The turn advantages behind the group heatmap's selector: every cell
-- (iteration, group, rollout, turn) of each run's latest $iteration_cap
-- iterations with turn data, fewer when they would pass $cell_cap cells
-- (the latest iteration always), with the group's prompt when known.
-- iterations_total counts the run's iterations with turn data (for the cap
-- note); advantage_range is the largest |advantage| among the cells shown
-- (the half-width of the diverging colour scale); group_rank orders the
-- groups of an iteration (numbered groups by number, then by id).
with cells as (
    select
        run_id,
        iteration,
        group_id,
        sample_idx,
        turn,
        prompt_hash,
        source,
        advantage,
        is_given
    from fct_turn_advantages
    where list_contains($runs, run_id)
),

iteration_cells as (
    select
        run_id,
        iteration,
        count(*) as cells
    from cells
    group by 1, 2
),

iterations_ranked as (
    select
        run_id,
        iteration,
        row_number() over latest_first as iteration_rank,
        sum(cells) over latest_first - cells as cells_before,
        count(*) over (partition by run_id) as iterations_total
    from iteration_cells
    window latest_first as (
        partition by run_id
        order by iteration desc
        rows between unbounded preceding and current row
    )
),

iterations_shown as (
    select
        run_id,
        iteration,
        iterations_total
    from iterations_ranked
    where
        iteration_rank <= $iteration_cap
        and (iteration_rank = 1 or cells_before < $cell_cap)
),

prompts as (
    select
        prompt_hash,
        prompt_preview
    from dim_prompts
)

select
    cells.run_id,
    cells.iteration,
    cells.group_id,
    cells.sample_idx,
    cells.turn,
    cells.source,
    cells.advantage,
    cells.is_given,
    prompts.prompt_preview,
    iterations_shown.iterations_total,
    max(abs(cells.advantage)) over (partition by cells.run_id) as advantage_range,
    dense_rank() over (
        partition by cells.run_id, cells.iteration
        order by try_cast(cells.group_id as bigint) nulls last, cells.group_id
    ) as group_rank
from cells
inner join iterations_shown
    on
        cells.run_id = iterations_shown.run_id
        and cells.iteration = iterations_shown.iteration
left join prompts on cells.prompt_hash = prompts.prompt_hash
-- run, the latest iteration first, group (group_rank), rollout, turn
order by 1 asc, 2 desc, 12 asc, 4 asc, 5 asc
