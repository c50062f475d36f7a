-- Each co-occurring instruction pair: lift (log2, as drawn), joint and expected success, n.
select
    run_id,
    instruction_a,
    instruction_b,
    n,
    joint_success_rate,
    expected_joint_rate,
    lift,
    drawn_log2_lift,
    has_too_few_rollouts,
    is_stuck_at_one,
    is_stuck_at_zero
from rpt_instruction_interference
where list_contains($runs, run_id)
order by 1, 2, 3
