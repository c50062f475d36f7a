{# The rule grpo_signal_loss: more than `signal_loss_share` of a batch's
   groups have zero variance (every rollout of the group scored the same:
   GRPO's advantages are 0 and the group gives no gradient) at
   `signal_loss_min_points` points running; critical from
   `signal_loss_share_critical`. From the rollouts (int_prompt_iteration's
   trainer groups, at each iteration as its step), split into groups all
   solved and all failed (its zero-variance split); a run without rollouts
   is judged on the share its trainer logged (zero_std_frac, TRL's
   frac_reward_zero_std), without that split. Each flagged point's signal
   says which side is larger: groups_all_solved (the prompts are too easy
   now), groups_all_failed (too hard, or a reward that cannot be earned),
   or zero_std_groups (the trainer's share alone). #}
{%- set points = var('signal_loss_min_points') -%}
{{ finding_rule_start({
    'prompt_iterations': ref('int_prompt_iteration'),
    'history': ref('int_metric_history'),
}) }}
rollout_batches as (
    select
        run_id,
        iteration as step,
        sum(n_groups) as n_groups,
        sum(n_zero_variance_groups) as n_zero_variance,
        sum(n_zero_variance_groups_solved) as n_solved,
        sum(n_zero_variance_groups_failed) as n_failed
    from prompt_iterations
    group by 1, 2
),

logged_batches as (
    {# The trainer's own share, for a run without rollouts. #}
    select
        history.run_id,
        history.step,
        history.value as zero_variance_share
    from history
    anti join rollout_batches on history.run_id = rollout_batches.run_id
    where
        history.canonical_metric = 'zero_std_frac'
        and {{ is_finite('history.value') }}
),

batches as (
    select
        run_id,
        step,
        cast(n_zero_variance as double) / n_groups as zero_variance_share,
        n_groups,
        n_zero_variance,
        n_solved,
        n_failed
    from rollout_batches
    where n_groups > 0
    union all
    select
        run_id,
        step,
        zero_variance_share,
        null as n_groups,
        null as n_zero_variance,
        null as n_solved,
        null as n_failed
    from logged_batches
),

running as (
    select
        *,
        min(zero_variance_share) over recent as recent_min_share,
        count(*) over recent as recent_points,
        min(step) over recent as recent_first_step
    from batches
    window recent as (
        partition by run_id order by step
        rows between {{ points - 1 }} preceding and current row
    )
),

flagged as (
    select *
    from running
    where
        recent_points = {{ points }}
        and recent_min_share > {{ var('signal_loss_share') }}
),

signals as (
    select
        run_id,
        'grpo_signal_loss' as pattern,
        case
            when n_groups is null then 'zero_std_groups'
            when n_solved >= n_failed then 'groups_all_solved'
            else 'groups_all_failed'
        end as signal,
        recent_first_step as start_step,
        step,
        case
            when zero_variance_share >= {{ var('signal_loss_share_critical') }} then 3
            else 2
        end as severity_rank,
        zero_variance_share as strength,
        cast(cast(round(100 * zero_variance_share) as bigint) as string) || '% of '
        || case
            when n_groups is null then 'the groups'
            else 'the ' || n_groups || ' groups'
        end
        || ' gave no gradient at step ' || step
        || case
            when n_groups is null then ' (zero_std_frac as the trainer logged it)'
            else
                ' (' || n_solved || ' all solved, ' || n_failed || ' all failed)'
        end as phrase,
        {{ key_value_list([
            ("'zero_variance_share'", 'zero_variance_share'),
            ("'groups'", 'cast(n_groups as double)'),
            ("'zero_variance_solved'", 'cast(n_solved as double)'),
            ("'zero_variance_failed'", 'cast(n_failed as double)'),
        ]) }} as measures
    from flagged
)

{{ finding_rule_end() }}
