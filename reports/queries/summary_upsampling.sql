-- `obs summary`: the run's $top best upsampling candidates.
select
    fct_prompt_learning.prompt_hash,
    dim_prompts.prompt_preview,
    fct_prompt_learning.upsampling_score,
    fct_prompt_learning.upsampling_score_scaled,
    fct_prompt_learning.final_score,
    fct_prompt_learning.learning_rate,
    fct_prompt_learning.num_forgetting_events
from fct_prompt_learning
left join dim_prompts
    on fct_prompt_learning.prompt_hash = dim_prompts.prompt_hash
where fct_prompt_learning.run_id = $run
order by  -- noqa: AM06
    fct_prompt_learning.upsampling_score_scaled desc, fct_prompt_learning.prompt_hash asc
limit $top
