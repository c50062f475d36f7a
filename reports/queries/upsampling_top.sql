select
    candidates.run_id,
    candidates.upsampling_rank,
    candidates.prompt_hash,
    dim_prompts.prompt_preview,
    candidates.priority,
    candidates.upsampling_score,
    candidates.final_score,
    candidates.learning_rate,
    candidates.num_forgetting_events,
    candidates.efficiency_quadrant
from fct_upsampling_candidates as candidates
left join dim_prompts on candidates.prompt_hash = dim_prompts.prompt_hash
where
    list_contains($runs, candidates.run_id)
    and candidates.upsampling_rank <= 20
order by 1, 2
