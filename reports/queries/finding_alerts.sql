-- The run findings that are reward alerts too (the held-out metric against the
-- reward, and GRPO's lost signal), as rows of alerts.sql with the same filters:
-- each one alert at its episode's first step, kind "finding", rule_name its
-- pattern, its summary the message.
with

finding_alerts as (
    select
        run_id,
        first_step as step,
        pattern as rule_name,
        'finding' as kind,
        cast(null as varchar) as metric,
        severity as level,
        case severity
            when 'critical' then 4 when 'warning' then 2 else 1
        end as level_rank,
        summary as message,
        cast(null as double) as value,
        cast(null as double) as threshold
    from fct_run_findings
    where
        pattern in (
            'held_out_collapse', 'reward_held_out_divergence', 'grpo_signal_loss'
        )
)

select * from finding_alerts
where
    level_rank >= $level_rank
    and ($run is null or run_id = $run)
    and ($since_step is null or step >= $since_step)
order by 1 asc, 2 asc, 7 desc, 3 asc
