{# The end-of-step group summary of a multi-turn agent's training, one row
   per run and iteration (the trainer's step). The group counts come whole
   from the richest source the iteration has (basis):
   1. rollouts (int_agent_rollouts): groups by group_id (default: the
      prompt); a group is filtered when the population std of its scores is
      below the var min_group_std (default 1e-6: zero-variance groups, which
      give GRPO no gradient); finished_early counts rollouts with num_turns <
      max_turns or an exit_reason other than exhausted, split by reason (the
      rate over the rollouts for which that can be told);
   2. else the trainer's console summary (stg_step_groups), as logged (with
      the trainer's own threshold and early-exit rule);
   3. else the tracker's `train/groups_kept`, `train/groups_filtered` and
      `train/num_early_exit`.
   Only runs with group counts from some source have rows: many trainers
   log tokens and times, and that alone makes no agentic run.
   Times, tokens, grad norm and loss are taken from the first source that
   has them in the same order. #}
with

agent as (
    select *
    from {{ ref('int_agent_rollouts') }}
    where group_id is not null
),

groups as (
    select
        run_id,
        iteration,
        group_id,
        {# all scores equal: std exactly 0, whatever the summing order #}
        coalesce(
            case
                when min(score) = max(score) then 0.0
                {#- exact: it meets min_group_std (is_filtered) #}
                else {{ exact_float('stddev_pop(score)') }}
            end,
            0
        ) < {{ var('min_group_std') }} as is_filtered
    from agent
    group by 1, 2, 3
),

group_counts as (
    select
        run_id,
        iteration,
        count(*) as groups_total,
        count(*) filter (where is_filtered) as groups_filtered
    from groups
    group by 1, 2
),

rollout_counts as (
    select
        run_id,
        iteration,
        count(*) as rollouts,
        count(finished_early) as rollouts_early_known,
        case
            when count(finished_early) > 0 then cast(count_if(finished_early) as bigint)
        end as finished_early,
        cast(count_if(finished_early and exit_reason = 'answered') as bigint) as early_answered,
        cast(count_if(finished_early and exit_reason = 'idk') as bigint) as early_idk,
        cast(count_if(finished_early and exit_reason = 'error') as bigint) as early_error,
        avg(num_turns) as mean_turns,
        cast(sum(total_tokens) as bigint) as total_tokens,
        cast(sum(trainable_tokens) as bigint) as trainable_tokens
    from agent
    group by 1, 2
),

from_rollouts as (
    select
        run_id,
        iteration,
        'rollouts' as basis,
        1 as basis_rank,
        group_counts.groups_total,
        group_counts.groups_total - group_counts.groups_filtered as groups_kept,
        group_counts.groups_filtered,
        rollout_counts.rollouts,
        rollout_counts.rollouts_early_known,
        rollout_counts.finished_early,
        rollout_counts.early_answered,
        rollout_counts.early_idk,
        rollout_counts.early_error,
        rollout_counts.mean_turns,
        rollout_counts.total_tokens,
        rollout_counts.trainable_tokens,
        cast(null as double) as rollout_time_s,
        cast(null as double) as training_time_s,
        cast(null as double) as grad_norm,
        cast(null as double) as total_loss,
        cast(null as boolean) as all_filtered_logged
    from group_counts
    inner join rollout_counts using (run_id, iteration)
),

from_log as (
    select
        run_id,
        step as iteration,
        'trainer-log' as basis,
        2 as basis_rank,
        coalesce(groups_total, groups_kept + groups_filtered) as groups_total,
        groups_kept,
        groups_filtered,
        rollouts,
        rollouts as rollouts_early_known,
        finished_early,
        total_tokens,
        trainable_tokens,
        rollout_time_s,
        training_time_s,
        grad_norm,
        total_loss,
        all_filtered as all_filtered_logged
    from {{ ref('stg_step_groups') }}
),

tracker_points as (
    select
        run_id,
        step as iteration,
        max(value) filter (where metric = 'train/groups_kept') as groups_kept,
        max(value) filter (where metric = 'train/groups_filtered') as groups_filtered,
        max(value) filter (where metric = 'train/num_early_exit') as finished_early,
        max(value) filter (where metric = 'train/rollout_time') as rollout_time_s,
        max(value) filter (where metric = 'train/training_time') as training_time_s,
        max(value) filter (where metric = 'train/total_tokens') as total_tokens,
        max(value) filter (where metric = 'train/trainable_tokens') as trainable_tokens
    from {{ ref('fct_metric_history') }}
    where
        metric in (
            'train/groups_kept', 'train/groups_filtered', 'train/num_early_exit',
            'train/rollout_time', 'train/training_time', 'train/total_tokens',
            'train/trainable_tokens'
        )
        and {{ is_finite('value') }}
    group by 1, 2
),

from_tracker as (
    select
        run_id,
        iteration,
        'tracker' as basis,
        3 as basis_rank,
        cast(groups_kept + groups_filtered as bigint) as groups_total,
        cast(groups_kept as bigint) as groups_kept,
        cast(groups_filtered as bigint) as groups_filtered,
        cast(finished_early as bigint) as finished_early,
        cast(total_tokens as bigint) as total_tokens,
        cast(trainable_tokens as bigint) as trainable_tokens,
        rollout_time_s,
        training_time_s
    from tracker_points
),

{# The three sources with the same columns (null where a source has none,
   typed as from_rollouts has them). #}
sources as (
    select
        run_id,
        iteration,
        basis,
        basis_rank,
        groups_total,
        groups_kept,
        groups_filtered,
        rollouts,
        rollouts_early_known,
        finished_early,
        early_answered,
        early_idk,
        early_error,
        mean_turns,
        total_tokens,
        trainable_tokens,
        rollout_time_s,
        training_time_s,
        grad_norm,
        total_loss,
        all_filtered_logged
    from from_rollouts
    union all
    select
        run_id,
        iteration,
        basis,
        basis_rank,
        groups_total,
        groups_kept,
        groups_filtered,
        rollouts,
        rollouts_early_known,
        finished_early,
        cast(null as bigint) as early_answered,
        cast(null as bigint) as early_idk,
        cast(null as bigint) as early_error,
        cast(null as double) as mean_turns,
        total_tokens,
        trainable_tokens,
        rollout_time_s,
        training_time_s,
        grad_norm,
        total_loss,
        all_filtered_logged
    from from_log
    union all
    select
        run_id,
        iteration,
        basis,
        basis_rank,
        groups_total,
        groups_kept,
        groups_filtered,
        cast(null as bigint) as rollouts,
        cast(null as bigint) as rollouts_early_known,
        finished_early,
        cast(null as bigint) as early_answered,
        cast(null as bigint) as early_idk,
        cast(null as bigint) as early_error,
        cast(null as double) as mean_turns,
        total_tokens,
        trainable_tokens,
        rollout_time_s,
        training_time_s,
        cast(null as double) as grad_norm,
        cast(null as double) as total_loss,
        cast(null as boolean) as all_filtered_logged
    from from_tracker
),

ranked_counts as (
    select
        *,
        min(basis_rank) over (partition by run_id, iteration) as best_rank
    from sources
    where groups_total is not null or finished_early is not null
),

counted as (
    {# the group counts of the best source that has them #}
    select
        run_id,
        iteration,
        basis,
        basis_rank,
        groups_total,
        groups_kept,
        groups_filtered,
        rollouts,
        rollouts_early_known,
        finished_early,
        early_answered,
        early_idk,
        early_error,
        mean_turns,
        total_tokens,
        trainable_tokens,
        rollout_time_s,
        training_time_s,
        grad_norm,
        total_loss,
        all_filtered_logged
    from ranked_counts
    where basis_rank = best_rank
),

filled as (
    {# the rest from the first source that has each #}
    select
        run_id,
        iteration,
        {{ arg_min('rollout_time_s', 'basis_rank') }} filter (where rollout_time_s is not null)
            as rollout_time_s,
        {{ arg_min('training_time_s', 'basis_rank') }} filter (where training_time_s is not null)
            as training_time_s,
        {{ arg_min('total_tokens', 'basis_rank') }} filter (where total_tokens is not null)
            as total_tokens,
        {{ arg_min('trainable_tokens', 'basis_rank') }} filter (where trainable_tokens is not null)
            as trainable_tokens,
        {{ arg_min('grad_norm', 'basis_rank') }} filter (where grad_norm is not null)
            as grad_norm,
        {{ arg_min('total_loss', 'basis_rank') }} filter (where total_loss is not null)
            as total_loss,
        bool_or(all_filtered_logged) as all_filtered_logged
    from sources
    group by 1, 2
),

counted_runs as (
    select distinct run_id from counted
),

final as (
    select
        ---------- ids
        filled.run_id,
        filled.iteration,

        ---------- strings
        counted.basis,

        ---------- numerics
        counted.groups_total,
        counted.groups_kept,
        counted.groups_filtered,
        counted.groups_filtered / nullif(counted.groups_total, 0) as filtered_share,
        counted.rollouts,
        counted.finished_early,
        counted.finished_early / nullif(counted.rollouts_early_known, 0) as early_exit_rate,
        counted.early_answered,
        counted.early_idk,
        counted.early_error,
        counted.finished_early
        - counted.early_answered
        - counted.early_idk
        - counted.early_error as early_other,
        counted.mean_turns,
        filled.rollout_time_s,
        filled.training_time_s,
        filled.total_tokens,
        filled.trainable_tokens,
        filled.trainable_tokens / nullif(filled.total_tokens, 0) as trainable_token_share,
        filled.grad_norm,
        filled.total_loss,
        case when counted.basis = 'rollouts' then {{ var('min_group_std') }} end
            as min_group_std,

        ---------- booleans
        coalesce(counted.groups_kept = 0, false) or coalesce(filled.all_filtered_logged, false)
            as all_groups_filtered
    from filled
    left join counted using (run_id, iteration)
    where filled.run_id in (select counted_runs.run_id from counted_runs)
)

select * from final
