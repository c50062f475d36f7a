-- One row per run and eval step of an agent (fct_eval_steps), baselines
-- first: the eval charts' series. The *_shown columns are what a chart may
-- draw: the beat rate only where the run had a baseline to beat (trainers
-- write 0 without one), the turn averages only where some sample answered
-- correctly or said "I don't know" (trainers write 0 when none did).
select
    run_id,
    step,
    is_baseline,
    has_baseline,
    basis,
    total_samples,
    correct_answers,
    accuracy,
    attempted_rate,
    found_rate,
    read_rate,
    idk_share,
    num_idk,
    total_searches,
    total_unique_searches,
    total_repeated_searches,
    repeated_search_share,
    avg_search_attempts,
    avg_turns_correct,
    avg_turns_idk,
    beat_rate,
    case when has_baseline then beat_rate end as beat_rate_shown,
    case when correct_answers = 0 then null else avg_turns_correct end
        as avg_turns_correct_shown,
    case when num_idk = 0 then null else avg_turns_idk end as avg_turns_idk_shown
from fct_eval_steps
where list_contains($runs, run_id)
-- run, its baseline first, step
order by 1 asc, 3 desc, 2 asc
