-- One row per run, iteration and turn (fct_turn_summary): the advantage by
-- turn and the rollouts still active. mean_advantage_range is the run's
-- largest |mean advantage|, the half-width of the diverging colour scale;
-- any_given says whether some advantage of the run was given by the source
-- (computed ones are centred on 0 at every turn by their rule).
select
    run_id,
    iteration,
    turn,
    rollouts_active,
    rollouts,
    active_share,
    mean_advantage,
    std_advantage,
    min_advantage,
    max_advantage,
    negative_share,
    all_given,
    max(abs(mean_advantage)) over (partition by run_id) as mean_advantage_range,
    max(std_advantage) over (partition by run_id) as std_advantage_range,
    bool_or(all_given) over (partition by run_id) as any_given
from fct_turn_summary
where list_contains($runs, run_id)
order by 1, 2, 3
