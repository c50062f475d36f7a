-- One prompt of one run: its text, its instructions, and the run's iterations of it.
select
    dim_prompts.prompt_hash,
    dim_prompts.data_idx,
    dim_prompts.prompt,
    dim_prompts.instruction_ids,
    dim_prompts.num_instructions,
    min(fct_prompt_iteration.iteration) as first_iteration,
    max(fct_prompt_iteration.iteration) as last_iteration
from dim_prompts
inner join fct_prompt_iteration
    on dim_prompts.prompt_hash = fct_prompt_iteration.prompt_hash
where fct_prompt_iteration.run_id = $run and dim_prompts.prompt_hash = $prompt_hash
group by all
