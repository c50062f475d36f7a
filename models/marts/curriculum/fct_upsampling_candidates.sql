with

fct_prompt_learning as (
    select * from {{ ref('fct_prompt_learning') }}
),

factored as (
    select
        run_id,
        prompt_hash,
        upsampling_score,
        {#- exact: it meets the priority thresholds and orders upsampling_rank #}
        {{ exact_float('upsampling_score_scaled') }} as upsampling_score_scaled,
        final_score,
        final_score_scaled,
        final_success_rate,
        learning_rate,
        learning_rate_scaled,
        num_forgetting_events,
        iterations_to_learn,
        is_learned,
        is_plateau,
        is_stuck_solved,
        is_stuck_failed,
        {{ upsampling_factor('final_score', 'final_score') }}
            as final_score_factor,
        {{ upsampling_factor('learning_rate', 'learning_rate') }}
            as learning_rate_factor,
        {{ upsampling_factor('forgetting', 'num_forgetting_events') }}
            as forgetting_factor,
        {# a run without a score range keeps the seed's factors, as its
           upsampling_score_scaled does (fct_prompt_learning) #}
        case
            when final_score_scaled is null
                then {{ upsampling_factor('final_score', 'final_score') }}
            else {{ upsampling_factor('final_score', 'final_score_scaled') }}
        end as final_score_factor_scaled,
        case
            when final_score_scaled is null
                then {{ upsampling_factor('learning_rate', 'learning_rate') }}
            else {{ upsampling_factor('learning_rate', 'learning_rate_scaled') }}
        end as learning_rate_factor_scaled
    from fct_prompt_learning
),

final as (
    select
        ---------- ids
        run_id,
        prompt_hash,

        ---------- strings
        {# priority and rank on the score scaled to the run's range (the
           seed's thresholds assume scores in [0, 1]) #}
        case
            when
                upsampling_score_scaled
                >= {{ var('upsampling_priority_high_from') }}
                then 'high'
            when
                upsampling_score_scaled
                >= {{ var('upsampling_priority_medium_from') }}
                then 'medium'
            else 'low'
        end as priority,
        {# learned (first success) and ended well (the share of the last
           visit's rollouts that succeed) under the build's one success
           rule, var success: a share in [0, 1] whatever the score's scale #}
        case
            when not is_learned then 'hard_failed'
            when
                iterations_to_learn <= {{ var('fast_learning_iterations') }}
                and final_success_rate
                >= {{ var('sample_efficiency_good_score') }}
                then 'fast_learner'
            when final_success_rate >= {{ var('sample_efficiency_good_score') }}
                then 'slow_learner'
            when iterations_to_learn <= {{ var('fast_learning_iterations') }}
                then 'quick_failure'
            else 'hard_failed'
        end as efficiency_quadrant,

        ---------- numerics
        row_number() over (
            partition by run_id
            order by upsampling_score_scaled desc, prompt_hash asc
        ) as upsampling_rank,
        upsampling_score,
        upsampling_score_scaled,
        final_score_factor,
        learning_rate_factor,
        forgetting_factor,
        final_score_factor_scaled,
        learning_rate_factor_scaled,
        final_score,
        final_score_scaled,
        final_success_rate,
        learning_rate,
        learning_rate_scaled,
        num_forgetting_events,
        iterations_to_learn,

        ---------- booleans
        is_plateau,
        is_stuck_solved,
        is_stuck_failed

    from factored
)

select * from final
