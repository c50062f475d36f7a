-- The capped prompt x iteration grid behind the prompt heatmaps.
select
    fct_prompt_iteration.run_id,
    fct_prompt_iteration.iteration,
    rank.prompt_hash,
    rank.prompt_label,
    rank.display_order,
    rank.num_forgetting_events,
    fct_prompt_iteration.mean_score,
    fct_prompt_iteration.mean_v_i,
    fct_prompt_iteration.mean_s_i,
    fct_prompt_iteration.prompt_strict_acc,
    -- solved under the build's success rule (var success): what the accuracy heatmap colours
    case when fct_prompt_iteration.is_solved then 1 else 0 end as solved,
    fct_prompt_iteration.std_score
from rpt_prompt_heatmap_rank as rank
inner join fct_prompt_iteration
    on
        rank.run_id = fct_prompt_iteration.run_id
        and rank.prompt_hash = fct_prompt_iteration.prompt_hash
where
    list_contains($runs, rank.run_id)
    and rank.informative_rank <= $cap
    and ($iterations is null or list_contains($iterations, fct_prompt_iteration.iteration))
-- run, display_order, iteration
order by 1, 5, 2
