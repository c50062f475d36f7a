with

fct_prompt_iteration as (
    select
        run_id,
        prompt_hash,
        iteration,
        mean_score,
        prompt_strict_acc,
        min_score,
        max_score,
        is_solved,
        success_rate,
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
        {# solved under the build's success (var success) #}
        min(iteration) filter (where is_solved) as first_success_iter,
        {{ regression_slope('mean_score', 'iteration') }} as learning_rate,
        var_samp(mean_score) filter (
            where recency <= {{ var('recent_window') }}
        ) as recent_variance,
        max(mean_score) filter (where recency = 1) as final_score,
        max(prompt_strict_acc) filter (where recency = 1) as final_strict_acc,
        max(case when is_solved then 1 else 0 end) filter (where recency = 1)
            as final_solved,
        {# the share of the last visit's rollouts that succeed (var success) #}
        max(success_rate) filter (where recency = 1) as final_success_rate,
        max(zero_variance_outcome) filter (where recency = 1)
            as final_zero_variance_outcome,
        max(case when is_solved then 1 else 0 end) as ever_solved,
        max(num_instructions) as num_instructions
    from ordered
    group by 1, 2
),

{# The run's observed score range: the seed's upsampling formula assumes
   scores in [0, 1]; its scaled twin reads each score as
   (score - run min) / (run max - run min). #}
run_ranges as (
    select
        run_id,
        min(min_score) as run_min_score,
        max(max_score) as run_max_score
    from fct_prompt_iteration
    group by 1
),

joined as (
    select
        aggregated.*,
        run_ranges.run_min_score,
        run_ranges.run_max_score,
        streaks.zero_variance_streak,
        coalesce(forgetting_counted.num_forgetting_events, 0)
            as num_forgetting_events
    from aggregated
    inner join run_ranges
        on aggregated.run_id = run_ranges.run_id
    inner join streaks
        on
            aggregated.run_id = streaks.run_id
            and aggregated.prompt_hash = streaks.prompt_hash
    left join forgetting_counted
        on
            aggregated.run_id = forgetting_counted.run_id
            and aggregated.prompt_hash = forgetting_counted.prompt_hash
),

scaled as (
    {# a run whose every score is equal has no range: its scaled columns
       are null and its scaled upsampling score is the seed's #}
    select
        *,
        (final_score - run_min_score)
        / nullif(run_max_score - run_min_score, 0) as final_score_scaled,
        learning_rate
        / nullif(run_max_score - run_min_score, 0) as learning_rate_scaled
    from joined
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
        final_success_rate,
        zero_variance_streak,
        {{ upsampling_factor('final_score', 'final_score') }}
        + {{ upsampling_factor('learning_rate', 'learning_rate') }}
        + {{ upsampling_factor('forgetting', 'num_forgetting_events') }}
            as upsampling_score,
        run_min_score,
        run_max_score,
        final_score_scaled,
        learning_rate_scaled,
        coalesce(
            {{ upsampling_factor('final_score', 'final_score_scaled') }}
            + {{ upsampling_factor('learning_rate', 'learning_rate_scaled') }}
            + {{ upsampling_factor('forgetting', 'num_forgetting_events') }},
            {{ upsampling_factor('final_score', 'final_score') }}
            + {{ upsampling_factor('learning_rate', 'learning_rate') }}
            + {{ upsampling_factor('forgetting', 'num_forgetting_events') }}
        ) as upsampling_score_scaled,

        ---------- booleans
        first_success_iter is not null as is_learned,
        ever_solved = 1 and final_solved = 0 as is_forgotten_at_end,
        coalesce(
            n_iterations >= {{ var('recent_window') }}
            and recent_variance < {{ var('plateau_variance_threshold') }},
            false
        ) as is_plateau,
        zero_variance_streak >= {{ var('dead_prompt_streak') }}
        and final_zero_variance_outcome = 'all_solved' as is_stuck_solved,
        zero_variance_streak >= {{ var('dead_prompt_streak') }}
        and final_zero_variance_outcome = 'all_failed' as is_stuck_failed

    from scaled
)

select * from final
