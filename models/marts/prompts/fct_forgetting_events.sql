with

fct_prompt_iteration as (
    select
        run_id,
        prompt_hash,
        iteration,
        mean_score,
        prompt_strict_acc
    from {{ ref('fct_prompt_iteration') }}
),

with_next as (
    select
        *,
        lead(iteration) over (
            partition by run_id, prompt_hash order by iteration
        ) as next_iteration,
        lead(prompt_strict_acc) over (
            partition by run_id, prompt_hash order by iteration
        ) as next_strict_acc,
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
    where prompt_strict_acc = 1 and next_strict_acc = 0
)

select * from events
