-- One row per run with reward data: the Summary statistics tiles.
-- current_* are the run's latest step; anomalies count fct_reward_anomalies'
-- is_anomaly; hacking_verdict is fct_reward_hacking's verdict for the total
-- reward over the whole run (null when the run has no row there). What the
-- total reward R is: current_basis (samples: each sample's reward functions
-- summed; logged: the reward the trainer logged) and current_score, the
-- rollouts' own mean score at the latest step (null without rollouts there),
-- which R need not equal. pair_note: which functions the pairwise marts
-- cover (fct_reward_pair_selection; null when every one).
with steps as (
    select
        run_id,
        count(*) as steps,
        min(step) as first_step,
        max(step) as last_step,
        arg_max(mean, step) as current_mean,
        arg_max(signal_to_noise, step) as current_signal_to_noise,
        arg_max(basis, step) as current_basis,
        count(*) filter (where basis = 'samples') as sample_steps,
        count(*) filter (where basis = 'logged') as logged_steps
    from fct_reward_steps
    where list_contains($runs, run_id)
    group by 1
),

functions as (
    select
        run_id,
        count(distinct reward_function) as reward_functions
    from fct_reward_function_steps
    where list_contains($runs, run_id)
    group by 1
),

anomalies as (
    select
        run_id,
        count(*) filter (where is_anomaly) as anomalies
    from fct_reward_anomalies
    where list_contains($runs, run_id)
    group by 1
),

alerts as (
    select
        run_id,
        count(*) as alerts
    from fct_alerts
    where list_contains($runs, run_id)
    group by 1
),

quality as (
    select
        run_id,
        quality_score
    from fct_reward_quality
    where list_contains($runs, run_id)
),

scores as (
    select
        run_id,
        iteration,
        mean_score
    from fct_iteration_summary
    where list_contains($runs, run_id)
),

pairing as (
    select
        run_id,
        note as pair_note
    from fct_reward_pair_selection
    where list_contains($runs, run_id)
),

hacking as (
    select
        run_id,
        verdict as hacking_verdict,
        suspected_functions
    from fct_reward_hacking
    where
        list_contains($runs, run_id)
        and scope = 'run'
        and reward_function is null
)

select
    steps.*,
    coalesce(functions.reward_functions, 0) as reward_functions,
    scores.mean_score as current_score,
    coalesce(anomalies.anomalies, 0) as anomalies,
    coalesce(alerts.alerts, 0) as alerts,
    quality.quality_score,
    hacking.hacking_verdict,
    hacking.suspected_functions,
    pairing.pair_note
from steps
left join functions on steps.run_id = functions.run_id
left join anomalies on steps.run_id = anomalies.run_id
left join alerts on steps.run_id = alerts.run_id
left join quality on steps.run_id = quality.run_id
left join hacking on steps.run_id = hacking.run_id
left join pairing on steps.run_id = pairing.run_id
left join scores
    on
        steps.run_id = scores.run_id
        and steps.last_step = scores.iteration
order by 1
