with

fct_prompt_iteration as (
    select
        run_id,
        prompt_hash,
        iteration,
        mean_score,
        prompt_strict_acc,
        is_zero_variance,
        zero_variance_outcome,
        num_instructions
    from {{ ref('fct_prompt_iteration') }}
),

fct_forgetting_events as (
    select
        run_id,
        prompt_hash
    from {{ ref('fct_forgetting_events') }}
),

forgetting_counted as (
    select
        run_id,
        prompt_hash,
        count(*) as num_forgetting_events
    from fct_forgetting_events
    group by 1, 2
),

ordered as (
    select
        *,
        row_number() over (
            partition by run_id, prompt_hash order by iteration desc
        ) as recency
    from fct_prompt_iteration
),

streaks as (
    {# The latest iteration that gave signal bounds the zero-variance streak. #}
    select
        run_id,
        prompt_hash,
        coalesce(min(recency) filter (where not is_zero_variance) - 1, count(*))
            as zero_variance_streak
    from ordered
    group by 1, 2
),

aggregated as (
    select
        run_id,
        prompt_hash,
        count(*) as n_iterations,
        min(iteration) as first_seen_iter,
        max(iteration) as last_seen_iter,
        min(iteration) filter (where prompt_strict_acc = 1)
            as first_success_iter,
        {{ exact_float(regression_slope('mean_score', 'iteration')) }} as learning_rate,
        {{ exact_float(
            'var_samp(mean_score) filter (where recency <= '
            ~ var('recent_window') ~ ')'
        ) }} as recent_variance,
        max(mean_score) filter (where recency = 1) as final_score,
        max(prompt_strict_acc) filter (where recency = 1) as final_strict_acc,
        max(zero_variance_outcome) filter (where recency = 1)
            as final_zero_variance_outcome,
        max(prompt_strict_acc) as ever_solved,
        max(num_instructions) as num_instructions
    from ordered
    group by 1, 2
),

joined as (
    select
        aggregated.*,
        streaks.zero_variance_streak,
        coalesce(forgetting_counted.num_forgetting_events, 0)
            as num_forgetting_events
    from aggregated
    inner join streaks
        on
            aggregated.run_id = streaks.run_id
            and aggregated.prompt_hash = streaks.prompt_hash
    left join forgetting_counted
        on
            aggregated.run_id = forgetting_counted.run_id
            and aggregated.prompt_hash = forgetting_counted.prompt_hash
),

final as (
    select
        ---------- ids
        run_id,
        prompt_hash,

        ---------- numerics
        n_iterations,
        num_instructions,
        first_seen_iter,
        last_seen_iter,
        first_success_iter,
        first_success_iter - first_seen_iter as iterations_to_learn,
        num_forgetting_events,
        learning_rate,
        recent_variance,
        final_score,
        final_strict_acc,
        zero_variance_streak,
        {{ upsampling_factor('final_score', 'final_score') }}
        + {{ upsampling_factor('learning_rate', 'learning_rate') }}
        + {{ upsampling_factor('forgetting', 'num_forgetting_events') }}
            as upsampling_score,

        ---------- booleans
        first_success_iter is not null as is_learned,
        ever_solved = 1 and final_strict_acc = 0 as is_forgotten_at_end,
        coalesce(
            n_iterations >= {{ var('recent_window') }}
            and recent_variance < {{ var('plateau_variance_threshold') }},
            false
        ) as is_plateau,
        zero_variance_streak >= {{ var('dead_prompt_streak') }}
        and final_zero_variance_outcome = 'all_solved' as is_stuck_solved,
        zero_variance_streak >= {{ var('dead_prompt_streak') }}
        and final_zero_variance_outcome = 'all_failed' as is_stuck_failed

    from joined
)

select * from final
