{{ config(materialized='view') }}
{# Each reward function's statistics per run and step: a view of
   int_reward_function_steps, which builds the rows for the models that
   read them, and where their rules are tested. The view names that table
   without the database, so it reads the same file's table when the
   warehouse is copied or attached under another name. #}
with

int_reward_function_steps as (
    select
        run_id,
        step,
        reward_function,
        basis,
        n,
        mean,
        std,
        min,
        max,
        total,
        variance,
        weight,
        signal_to_noise,
        contribution_pct,
        seed_contribution_pct,
        abs_share,
        is_zero_variance,
        is_logged_only
    from {{ ref('int_reward_function_steps').include(database=false) }}
)

select * from int_reward_function_steps
