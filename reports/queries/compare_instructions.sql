-- One row per run and instruction type: its success over the chosen iterations
-- (rollouts weighted, as fct_instruction_difficulty weighs them over all of them),
-- at the first and last of them, and the type's tier over the whole run.
with chosen as (
    select
        run_id,
        iteration,
        instruction_id,
        n,
        success_rate
    from fct_instruction_iteration
    where
        list_contains($runs, run_id)
        and ($iterations is null or list_contains($iterations, iteration))
)

select
    chosen.run_id,
    chosen.instruction_id,
    sum(chosen.n) as n,
    sum(chosen.success_rate * chosen.n) / sum(chosen.n) as avg_success_rate,
    arg_min(chosen.success_rate, chosen.iteration) as first_success_rate,
    arg_max(chosen.success_rate, chosen.iteration) as last_success_rate,
    any_value(difficulty.tier) as tier
from chosen
inner join fct_instruction_difficulty as difficulty
    on
        chosen.run_id = difficulty.run_id
        and chosen.instruction_id = difficulty.instruction_id
group by 1, 2
order by 1, 2
