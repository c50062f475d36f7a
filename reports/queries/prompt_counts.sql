-- How many prompts each run has, to state what a capped chart leaves out.
select
    run_id,
    count(*) as prompts
from fct_prompt_learning
where list_contains($runs, run_id)
group by 1
