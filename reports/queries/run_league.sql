-- `obs analyze`: the run's league evaluations (the steps with a finite Elo).
with

league as (
    select
        step,
        case when isfinite(elo) then elo end as elo,
        case when isfinite(best_elo) then best_elo end as best_elo,
        case when isfinite(win_rate) then win_rate end as win_rate,
        case
            when isfinite(league_checkpoints) then league_checkpoints
        end as league_checkpoints,
        case
            when isfinite(games_played) then games_played
        end as games_played
    from fct_league
    where run_id = $run
)

select
    count(*) as evaluations,
    arg_min(elo, step) as first_elo,
    arg_max(elo, step) as last_elo,
    max(best_elo) as best_elo,
    max(elo) as peak_elo,
    arg_max(win_rate, step) as last_win_rate,
    max(league_checkpoints) as checkpoints,
    sum(games_played) as games_played
from league
where elo is not null
