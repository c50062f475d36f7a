-- One row per run with agent data: the summary tiles. latest_* are the
-- run's latest eval step (baselines aside) and its latest iteration with
-- group counts; baseline_accuracy is the baseline eval's (step -1).
with evals as (
    select *
    from fct_eval_steps
    where list_contains($runs, run_id)
),

latest_eval as (
    select
        run_id,
        step as eval_step,
        previous_step,
        accuracy,
        accuracy_change,
        correct_answers,
        total_samples,
        case when has_baseline then beat_rate end as beat_rate
    from evals
    where not is_baseline
    qualify row_number() over (partition by run_id order by step desc) = 1
),

baseline as (
    select
        run_id,
        accuracy as baseline_accuracy
    from evals
    where is_baseline
    qualify row_number() over (partition by run_id order by step desc) = 1
),

eval_counts as (
    select
        run_id,
        count(*) filter (where not is_baseline) as eval_steps
    from evals
    group by 1
),

groups as (
    select *
    from fct_group_summary
    where
        list_contains($runs, run_id)
        and basis is not null
),

latest_group as (
    select
        run_id,
        iteration as group_iteration,
        basis as group_basis,
        groups_total,
        groups_kept,
        groups_filtered,
        rollouts,
        finished_early,
        early_exit_rate,
        trainable_token_share
    from groups
    qualify row_number() over (partition by run_id order by iteration desc) = 1
),

group_counts as (
    select
        run_id,
        count(*) as iterations,
        count(*) filter (where all_groups_filtered) as all_filtered_iterations
    from groups
    group by 1
),

turn_counts as (
    select
        run_id,
        count(distinct iteration) as advantage_iterations
    from fct_turn_advantages
    where list_contains($runs, run_id)
    group by 1
),

runs as (
    select run_id from eval_counts
    union
    select run_id from group_counts
    union
    select run_id from turn_counts
)

select
    runs.run_id,
    latest_eval.eval_step,
    latest_eval.previous_step,
    latest_eval.accuracy,
    latest_eval.accuracy_change,
    latest_eval.correct_answers,
    latest_eval.total_samples,
    latest_eval.beat_rate,
    baseline.baseline_accuracy,
    coalesce(eval_counts.eval_steps, 0) as eval_steps,
    latest_group.group_iteration,
    latest_group.group_basis,
    latest_group.groups_total,
    latest_group.groups_kept,
    latest_group.groups_filtered,
    latest_group.rollouts,
    latest_group.finished_early,
    latest_group.early_exit_rate,
    latest_group.trainable_token_share,
    coalesce(group_counts.iterations, 0) as iterations,
    coalesce(group_counts.all_filtered_iterations, 0) as all_filtered_iterations,
    coalesce(turn_counts.advantage_iterations, 0) as advantage_iterations
from runs
left join latest_eval on runs.run_id = latest_eval.run_id
left join baseline on runs.run_id = baseline.run_id
left join eval_counts on runs.run_id = eval_counts.run_id
left join latest_group on runs.run_id = latest_group.run_id
left join group_counts on runs.run_id = group_counts.run_id
left join turn_counts on runs.run_id = turn_counts.run_id
order by 1
