{{ config(materialized='view') }}
{# Reward as a power of compute, fitted per run and per base model: a view
   of int_power_law_fit, which builds the rows for the models that read
   them (the findings), and where their rules are tested. The view names
   that table without the database, so it reads the same file's table when
   the warehouse is copied or attached under another name. #}
with

int_power_law_fit as (
    select
        scope,
        fit_id,
        run_id,
        base_model_id,
        runs,
        exponent,
        prefactor,
        r_squared,
        n_used,
        n_excluded,
        first_step,
        last_step,
        min_compute,
        max_compute,
        max_reward,
        target_reward,
        compute_for_target
    from {{ ref('int_power_law_fit').include(database=false) }}
)

select * from int_power_law_fit
