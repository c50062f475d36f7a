-- Recent variance per prompt, the capped set with the lowest variance first.
select
    learning.run_id,
    learning.prompt_hash,
    rank.prompt_label,
    learning.recent_variance,
    -- a log axis cannot draw 0: flat prompts are drawn at the floor
    greatest(learning.recent_variance, $variance_floor) as drawn_variance,
    learning.is_plateau
from fct_prompt_learning as learning
inner join rpt_prompt_heatmap_rank as rank
    on
        learning.run_id = rank.run_id
        and learning.prompt_hash = rank.prompt_hash
where
    list_contains($runs, learning.run_id)
    and learning.recent_variance is not null
qualify
    row_number() over (
        partition by learning.run_id order by learning.recent_variance, learning.prompt_hash
    ) <= $cap
-- run, the lowest recent variance first, prompt
order by 1, 4, 2
