with

fct_prompt_iteration as (
    select
        run_id,
        prompt_hash,
        iteration,
        mean_score,
        is_solved
    from {{ ref('fct_prompt_iteration') }}
),

with_next as (
    select
        *,
        lead(iteration) over (
            partition by run_id, prompt_hash order by iteration
        ) as next_iteration,
        lead(is_solved) over (
            partition by run_id, prompt_hash order by iteration
        ) as is_next_solved,
        lead(mean_score) over (
            partition by run_id, prompt_hash order by iteration
        ) as next_mean_score
    from fct_prompt_iteration
),

events as (
    select
        ---------- ids
        run_id,
        prompt_hash,
        next_iteration as forgotten_iter,

        ---------- numerics
        iteration as solved_iter,
        mean_score as score_before,
        next_mean_score as score_after,
        mean_score - next_mean_score as score_drop,
        row_number() over (
            partition by run_id, prompt_hash order by iteration
        ) as event_number

    from with_next
    {# solved and unsolved under the build's success (var success) #}
    where is_solved and not is_next_solved
)

select * from events
