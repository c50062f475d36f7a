select run_id, instruction_a, instruction_b, n, joint_success_rate, expected_joint_rate, lift,
    is_stuck_at_one, is_stuck_at_zero
from fct_instruction_pairs
where list_contains($runs, run_id)
order by run_id, instruction_a, instruction_b
