-- One row per alert (fct_alerts), with the mean reward at its step so the
-- timeline can draw the alert on the reward line; the most severe first
-- within a step.
select
    alerts.run_id,
    alerts.step,
    alerts.level,
    alerts.level_rank,
    alerts.rule_name,
    alerts.kind,
    alerts.metric,
    alerts.message,
    alerts.value,
    alerts.threshold,
    steps.mean as mean_reward
from fct_alerts as alerts
left join fct_reward_steps as steps
    on alerts.run_id = steps.run_id and alerts.step = steps.step
where list_contains($runs, alerts.run_id)
-- run, step, the most severe first (level_rank), rule
order by 1 asc, 2 asc, 4 desc, 5 asc
