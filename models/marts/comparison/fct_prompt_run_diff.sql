{# Prompt by prompt, how two runs that share prompts differ: when each first
   solved it, where each ended, and what one learned or forgot that the other
   did not. Pairs are unordered (run_a < run_b); every flag is given for both
   sides, so "learned only in B" is one filter whichever run a user names. #}
with

learning as (
    select * from {{ ref('fct_prompt_learning') }}
),

pairs as (
    select
        a.run_id as run_a,
        b.run_id as run_b,
        a.prompt_hash,
        a.first_success_iter as first_success_iter_a,
        b.first_success_iter as first_success_iter_b,
        a.final_score as final_score_a,
        b.final_score as final_score_b,
        a.final_strict_acc as final_strict_acc_a,
        b.final_strict_acc as final_strict_acc_b,
        a.num_forgetting_events as forgetting_events_a,
        b.num_forgetting_events as forgetting_events_b,
        a.is_learned as is_learned_a,
        b.is_learned as is_learned_b
    from learning as a
    inner join learning as b
        on
            a.prompt_hash = b.prompt_hash
            and a.run_id < b.run_id
),

final as (
    select
        run_a,
        run_b,
        prompt_hash,
        first_success_iter_a,
        first_success_iter_b,
        first_success_iter_b - first_success_iter_a as first_success_delta,
        final_score_a,
        final_score_b,
        final_score_b - final_score_a as final_score_delta,
        final_strict_acc_a,
        final_strict_acc_b,
        is_learned_a,
        is_learned_b,
        is_learned_a and not is_learned_b as learned_only_in_a,
        is_learned_b and not is_learned_a as learned_only_in_b,
        forgetting_events_a > 0 and forgetting_events_b = 0 as forgotten_only_in_a,
        forgetting_events_b > 0 and forgetting_events_a = 0 as forgotten_only_in_b,
        forgetting_events_a,
        forgetting_events_b
    from pairs
)

select * from final
