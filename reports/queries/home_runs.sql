-- Every run of the warehouse, one row each: where it came from, how far it got,
-- what was found, when it last landed. A run has rollouts, a tracker history or both.
with

rollout_runs as (
    select
        run_id,
        max(iteration) as last_iteration,
        sum(n_rollouts) as rollouts,
        max(ingested_through) as rollouts_landed_at
    from fct_iteration_summary
    group by 1
),

tracker_runs as (
    select
        run_id,
        sources,
        state,
        last_step,
        last_landed_at
    from dim_runs
),

findings as (
    select
        run_id,
        count(*) filter (where severity = 'critical') as findings_critical,
        count(*) filter (where severity = 'warning') as findings_warning,
        count(*) filter (where severity = 'info') as findings_info
    from fct_run_findings
    group by 1
),

alerts as (
    select
        run_id,
        count(*) filter (where level = 'critical') as alerts_critical,
        count(*) filter (where level = 'error') as alerts_error,
        count(*) filter (where level = 'warning') as alerts_warning
    from fct_alerts
    group by 1
),

reward_runs as (
    select distinct run_id from fct_reward_steps
),

agent_runs as (
    select run_id from fct_eval_steps
    union
    select run_id from fct_group_summary
),

agent_run_ids as (
    select distinct run_id from agent_runs
),

run_ids as (
    select run_id from rollout_runs
    union
    select run_id from tracker_runs
)

select
    run_ids.run_id,
    -- every source the run landed from: its trackers' and its rollouts
    array_to_string(
        list_concat(
            coalesce(tracker_runs.sources, []::varchar[]),
            case when rollout_runs.run_id is not null then ['rollouts'] else [] end
        ),
        ', '
    ) as sources,
    tracker_runs.state,
    held_out.held_out_metric,
    held_out.held_out_first,
    held_out.held_out_last,
    rollout_runs.last_iteration,
    tracker_runs.last_step,
    coalesce(rollout_runs.rollouts, 0) as rollouts,
    coalesce(findings.findings_critical, 0) as findings_critical,
    coalesce(findings.findings_warning, 0) as findings_warning,
    coalesce(findings.findings_info, 0) as findings_info,
    coalesce(alerts.alerts_critical, 0) as alerts_critical,
    coalesce(alerts.alerts_error, 0) as alerts_error,
    coalesce(alerts.alerts_warning, 0) as alerts_warning,
    rollout_runs.run_id is not null as has_rollouts,
    tracker_runs.run_id is not null as has_history,
    reward_runs.run_id is not null as has_rewards,
    agent_run_ids.run_id is not null as has_agent,
    greatest(rollout_runs.rollouts_landed_at, tracker_runs.last_landed_at) as last_landed_at
from run_ids
left join rollout_runs on run_ids.run_id = rollout_runs.run_id
left join tracker_runs on run_ids.run_id = tracker_runs.run_id
left join findings on run_ids.run_id = findings.run_id
left join alerts on run_ids.run_id = alerts.run_id
left join reward_runs on run_ids.run_id = reward_runs.run_id
-- the held-out metric shown first among the numbers
left join rpt_run_held_out as held_out on run_ids.run_id = held_out.run_id
left join agent_run_ids on run_ids.run_id = agent_run_ids.run_id
order by 1
