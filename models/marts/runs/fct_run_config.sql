{# Every flattened config key of every run (for search and config diffs). #}
with

runs as (
    select
        run_id,
        config
    from {{ ref('dim_runs') }}
),

leaves as (
    {{ json_leaves('runs', 'run_id', 'config') }}
),

final as (
    select
        run_id,
        key,
        text as value,
        type as value_type
    from leaves
)

select * from final
