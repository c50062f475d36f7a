-- One row per run: how many of its prompts ended in each outcome (fct_prompt_learning).
select
    run_id,
    count(*) as prompts,
    count(*) filter (where is_learned) as learned,
    count(*) filter (where not is_learned) as never_solved,
    count(*) filter (where num_forgetting_events > 0) as forgotten,
    count(*) filter (where is_forgotten_at_end) as forgotten_at_end,
    count(*) filter (where is_plateau) as plateaued,
    count(*) filter (where is_stuck_solved) as stuck_solved,
    count(*) filter (where is_stuck_failed) as stuck_failed
from fct_prompt_learning
where list_contains($runs, run_id)
group by 1
order by 1
