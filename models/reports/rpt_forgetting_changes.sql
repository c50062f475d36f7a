{# Iteration-to-iteration change of each prompt's strict accuracy. #}
with

fct_prompt_iteration as (
    select
        run_id,
        prompt_hash,
        iteration,
        prompt_strict_acc,
        mean_score
    from {{ ref('fct_prompt_iteration') }}
),

changes as (
    select
        ---------- ids
        run_id,
        prompt_hash,
        iteration,

        ---------- numerics
        prompt_strict_acc - lag(prompt_strict_acc) over (
            partition by run_id, prompt_hash order by iteration
        ) as strict_acc_change,
        mean_score - lag(mean_score) over (
            partition by run_id, prompt_hash order by iteration
        ) as mean_score_change

    from fct_prompt_iteration
)

select * from changes
where strict_acc_change is not null
