{# The league's view of a run: Elo of the current challenger, its win rate
   against the gatekeepers and the league's size, at each step where a league
   metric was logged. A separate evaluation job logs these at steps of its own,
   so the checkpoint it evaluated (`elo/evaluation_step`, else `elo/step`) is
   kept beside the logged step. #}
with

steps as (
    select * from {{ ref('int_run_steps') }}
),

logged as (
    select
        run_id,
        step,
        elo,
        win_rate,
        games_played,
        league_checkpoints,
        best_elo,
        coalesce(evaluation_step, step) as evaluation_step
    from steps
    where
        elo is not null
        or win_rate is not null
        or games_played is not null
        or league_checkpoints is not null
        or best_elo is not null
),

final as (
    select
        run_id,
        step,
        elo,
        win_rate,
        games_played,
        league_checkpoints,
        best_elo,
        evaluation_step,
        elo - lag(elo) over (partition by run_id order by step) as elo_change
    from logged
)

select * from final
