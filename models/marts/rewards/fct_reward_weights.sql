{{ config(materialized='view') }}
{# The weight of every reward function of every run, and how it was found:
   a view of int_reward_weights, which the reward models read and where the
   rules are tested. #}
with

int_reward_weights as (
    select
        run_id,
        reward_function,
        found_by,
        fit_status,
        note,
        weight,
        fit_points,
        fit_relative_residual,
        is_logged_only
    from {{ ref('int_reward_weights').include(database=false) }}
)

select * from int_reward_weights
