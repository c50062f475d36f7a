-- `obs summary`: how the run's prompts learned (fct_prompt_learning).
select
    count(*) as prompts,
    count(*) filter (where is_learned) as prompts_learned,
    count(*) filter (where num_forgetting_events > 0) as prompts_forgotten,
    coalesce(sum(num_forgetting_events), 0) as forgetting_events,
    count(*) filter (where is_plateau) as prompts_plateaued,
    count(*) filter (where not is_learned) as prompts_never_solved,
    count(*) filter (where is_stuck_solved) as prompts_stuck_solved,
    count(*) filter (where is_stuck_failed) as prompts_stuck_failed
from fct_prompt_learning
where run_id = $run
