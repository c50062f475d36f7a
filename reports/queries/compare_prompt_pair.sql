-- `obs compare`: what two runs that trained on the same prompts learned and
-- forgot apart (fct_prompt_run_diff holds each pair once, $run_a < $run_b).
select
    count(*) as shared_prompts,
    count(*) filter (where learned_only_in_a) as learned_only_in_a,
    count(*) filter (where learned_only_in_b) as learned_only_in_b,
    count(*) filter (where forgotten_only_in_a) as forgotten_only_in_a,
    count(*) filter (where forgotten_only_in_b) as forgotten_only_in_b,
    avg(final_score_delta) as mean_final_score_delta
from fct_prompt_run_diff
where run_a = $run_a and run_b = $run_b
