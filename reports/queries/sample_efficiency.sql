select
    candidates.run_id,
    candidates.prompt_hash,
    rank.prompt_label,
    candidates.iterations_to_learn,
    candidates.final_score,
    -- what the quadrant's good/poor divide reads (var success)
    candidates.final_success_rate,
    candidates.efficiency_quadrant,
    learning.num_instructions
from fct_upsampling_candidates as candidates
inner join fct_prompt_learning as learning
    on
        candidates.run_id = learning.run_id
        and candidates.prompt_hash = learning.prompt_hash
inner join rpt_prompt_heatmap_rank as rank
    on
        candidates.run_id = rank.run_id
        and candidates.prompt_hash = rank.prompt_hash
where
    list_contains($runs, candidates.run_id)
    and rank.informative_rank <= $scatter_cap
order by 1, 2
