-- A page of a prompt's rollouts at one iteration, with their responses: read from
-- staging (stg_rollouts, a view over the lake), as no mart copies the responses'
-- text (docs/architecture.md, "The read layer").
select
    sample_idx,
    score,
    prompt_strict_acc,
    inst_strict_acc,
    response_chars,
    left(response, $shown) as response,
    source_file,
    source_line
from stg_rollouts
where run_id = $run and prompt_hash = $prompt_hash and iteration = $iteration
order by 1
limit $page_size offset $offset
