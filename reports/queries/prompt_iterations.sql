-- A prompt's score, strict accuracy and success rate (var success) at every iteration of a run.
select
    iteration,
    n_samples,
    mean_score,
    std_score,
    min_score,
    max_score,
    strict_success_rate,
    pass_rate,
    success_rate,
    mean_response_chars
from fct_prompt_iteration
where run_id = $run and prompt_hash = $prompt_hash
order by 1
