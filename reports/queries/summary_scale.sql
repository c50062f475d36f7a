-- `obs summary`: how the run's rollouts are judged solved, and its score range.
select
    case
        when
            any_value(fct_iteration_summary.solved_by) in ('score', 'function')
            then any_value(fct_iteration_summary.solved_by)
        when sum(fct_iteration_summary.n_judged_by_instructions) = 0 then 'pass_threshold'
        when
            sum(fct_iteration_summary.n_judged_by_instructions)
            = sum(fct_iteration_summary.n_rollouts)
            then 'instructions'
        else 'both'
    end as solved_by,
    any_value(rpt_dashboard_settings.pass_threshold) as pass_threshold,
    any_value(rpt_dashboard_settings.success) as success,
    any_value(rpt_dashboard_settings.success_kind) as success_kind,
    any_value(rpt_dashboard_settings.success_function) as success_function,
    any_value(rpt_dashboard_settings.success_threshold) as success_threshold,
    min(fct_iteration_summary.min_score) as min_score,
    max(fct_iteration_summary.max_score) as max_score,
    min(fct_iteration_summary.min_success_value) as min_success_value,
    max(fct_iteration_summary.max_success_value) as max_success_value
from fct_iteration_summary
cross join rpt_dashboard_settings
where fct_iteration_summary.run_id = $run
