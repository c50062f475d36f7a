-- `obs agent advantages`: the turn advantages of the groups $groups at the
-- run's iteration, a cell per rollout and turn.
select
    group_id,
    sample_idx,
    turn,
    advantage,
    is_given,
    source
from fct_turn_advantages
where
    run_id = $run
    and iteration = $iteration
    and list_contains($groups, group_id)
order by 1, 2, 3
