{# Which prompts a capped heatmap shows first: the most informative. #}
with

fct_prompt_iteration as (
    select
        run_id,
        prompt_hash,
        mean_score
    from {{ ref('fct_prompt_iteration') }}
),

fct_prompt_learning as (
    select
        run_id,
        prompt_hash,
        first_success_iter,
        num_forgetting_events,
        is_stuck_solved,
        is_stuck_failed
    from {{ ref('fct_prompt_learning') }}
),

dim_prompts as (
    select
        prompt_hash,
        prompt_preview
    from {{ ref('dim_prompts') }}
),

movement as (
    select
        run_id,
        prompt_hash,
        case
            when min(mean_score) = max(mean_score) then 0.0
            {#- exact: it orders informative_rank #}
            else {{ exact_float('stddev_samp(mean_score)') }}
        end as score_movement
    from fct_prompt_iteration
    group by 1, 2
),

ranked as (
    select
        fct_prompt_learning.run_id,
        fct_prompt_learning.prompt_hash,
        dim_prompts.prompt_preview,
        fct_prompt_learning.first_success_iter,
        fct_prompt_learning.num_forgetting_events,
        movement.score_movement,
        row_number() over (
            partition by fct_prompt_learning.run_id
            order by
                fct_prompt_learning.num_forgetting_events desc,
                movement.score_movement desc,
                fct_prompt_learning.prompt_hash asc
        ) as informative_rank
    from fct_prompt_learning
    inner join movement
        on
            fct_prompt_learning.run_id = movement.run_id
            and fct_prompt_learning.prompt_hash = movement.prompt_hash
    left join dim_prompts
        on fct_prompt_learning.prompt_hash = dim_prompts.prompt_hash
),

final as (
    select
        ---------- ids
        run_id,
        prompt_hash,

        ---------- strings
        prompt_hash || '  ' || coalesce(prompt_preview, '') as prompt_label,

        ---------- numerics
        informative_rank,
        first_success_iter,
        num_forgetting_events,
        score_movement,
        {# Heatmap order: prompts solved earliest on top, never solved last. #}
        row_number() over (
            partition by run_id
            order by
                coalesce(first_success_iter, 2147483647),
                prompt_hash
        ) as display_order

    from ranked
)

select * from final
