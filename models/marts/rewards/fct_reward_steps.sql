{{ config(materialized='view') }}
{# The per-sample total reward's statistics per run and step, with the
   training dynamics and the performance metric logged there: a view of
   int_reward_steps, which builds the rows for the models that read them,
   and where their rules are tested. The view names that table without the
   database, so it reads the same file's table when the warehouse is copied
   or attached under another name. #}
with

int_reward_steps as (
    select
        run_id,
        step,
        basis,
        performance_metric,
        n,
        mean,
        seed_mean,
        std,
        min,
        max,
        total,
        signal_to_noise,
        entropy,
        variance,
        kl_divergence,
        policy_entropy,
        advantage_mean,
        advantage_std,
        performance,
        is_zero_variance
    from {{ ref('int_reward_steps').include(database=false) }}
)

select * from int_reward_steps
