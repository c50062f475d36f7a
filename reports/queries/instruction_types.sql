select
    fct_instruction_iteration.run_id,
    fct_instruction_iteration.iteration,
    fct_instruction_iteration.instruction_id,
    fct_instruction_iteration.n,
    fct_instruction_iteration.success_rate,
    difficulty.tier,
    difficulty.difficulty_rank,
    difficulty.avg_success_rate
from fct_instruction_iteration
inner join fct_instruction_difficulty as difficulty
    on
        fct_instruction_iteration.run_id = difficulty.run_id
        and fct_instruction_iteration.instruction_id = difficulty.instruction_id
where
    list_contains($runs, fct_instruction_iteration.run_id)
    and ($iterations is null or list_contains($iterations, fct_instruction_iteration.iteration))
-- run, the hardest first (difficulty_rank), instruction, iteration
order by 1, 7, 3, 2
