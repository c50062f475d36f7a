{{ config(materialized='view') }}
{# Each logged metric obs can recompute from a step's rollouts, set against
   that value: a view of int_metric_audit_steps, where the alignment,
   conventions and tolerances are documented and tested, and which the
   finding reads. #}
with

audit as (
    select * from {{ ref('int_metric_audit_steps').include(database=false) }}
),

final as (
    select
        run_id,
        step,
        metric,
        canonical_metric,
        reward_function,
        convention,
        verdict,
        logged_value,
        recomputed_value,
        difference,
        tolerance
    from audit
)

select * from final
