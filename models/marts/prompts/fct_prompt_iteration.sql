{{ config(materialized='view') }}
{# How each prompt's group of rollouts scored at each iteration: a view of
   int_prompt_iteration, which builds the rows (by run and iteration) for
   the models that read them, and where their rules are tested. The view
   names that table without the database, so it reads the same file's
   table when the warehouse is copied or attached under another name. #}
with

int_prompt_iteration as (
    select
        run_id,
        iteration,
        prompt_hash,
        zero_variance_outcome,
        n_samples,
        mean_score,
        std_score,
        min_score,
        max_score,
        mean_v_i,
        mean_s_i,
        mean_inst_strict_acc,
        num_instructions,
        n_judged_by_instructions,
        prompt_strict_acc,
        strict_success_rate,
        best_mean_gap,
        consistency_score,
        pass_rate,
        success_rate,
        min_success_value,
        max_success_value,
        mean_at_1,
        mean_at_3,
        mean_at_5,
        mean_at_10,
        mean_at_20,
        mean_response_chars,
        n_groups,
        n_zero_variance_groups,
        n_zero_variance_groups_solved,
        n_zero_variance_groups_failed,
        is_zero_variance,
        is_solved,
        ingested_through
    from {{ ref('int_prompt_iteration').include(database=false) }}
)

select * from int_prompt_iteration
