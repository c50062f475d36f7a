{# Iteration-to-iteration change of each prompt's solved flag under the
   build's success rule (var success; -1 is a forgetting event, as
   fct_forgetting_events counts them), and of its strict accuracy. #}
with

fct_prompt_iteration as (
    select
        run_id,
        prompt_hash,
        iteration,
        prompt_strict_acc,
        case when is_solved then 1 else 0 end as solved,
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
        solved - lag(solved) over (
            partition by run_id, prompt_hash order by iteration
        ) as solved_change,
        prompt_strict_acc - lag(prompt_strict_acc) over (
            partition by run_id, prompt_hash order by iteration
        ) as strict_acc_change,
        mean_score - lag(mean_score) over (
            partition by run_id, prompt_hash order by iteration
        ) as mean_score_change

    from fct_prompt_iteration
)

select * from changes
where solved_change is not null
