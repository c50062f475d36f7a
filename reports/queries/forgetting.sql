-- Solved changes (var success) of the capped prompts, most forgetful first.
select
    changes.run_id,
    changes.iteration,
    rank.prompt_hash,
    rank.prompt_label,
    rank.num_forgetting_events,
    changes.solved_change,
    changes.strict_acc_change,
    changes.mean_score_change
from rpt_forgetting_changes as changes
inner join rpt_prompt_heatmap_rank as rank
    on
        changes.run_id = rank.run_id
        and changes.prompt_hash = rank.prompt_hash
where
    list_contains($runs, changes.run_id)
    and rank.informative_rank <= $cap
    and ($iterations is null or list_contains($iterations, changes.iteration))
-- the capped prompts in rank order (the rank is not selected: no position to name it by)
order by changes.run_id, rank.informative_rank, changes.iteration  -- noqa: AM06
