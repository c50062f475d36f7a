{{ config(materialized='view') }}
{# Infrastructure health per run and step (failed rollouts, the slowest
   game's and volume reload's times and their scores): a view of
   int_rollout_reliability, which builds the rows for the models that read
   them (the findings), and where their rules are tested. The view names
   that table without the database, so it reads the same file's table when
   the warehouse is copied or attached under another name. #}
with

int_rollout_reliability as (
    select
        run_id,
        step,
        failed_rollouts,
        max_total_s,
        max_volume_reload_s,
        max_total_s_z,
        max_volume_reload_s_z,
        max_total_s_trailing_median,
        max_volume_reload_s_trailing_median,
        max_total_s_trailing_points,
        max_volume_reload_s_trailing_points,
        is_failure,
        is_total_spike,
        is_reload_spike
    from {{ ref('int_rollout_reliability').include(database=false) }}
)

select * from int_rollout_reliability
