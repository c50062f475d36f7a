{# Every flattened config key of every run (for search and config diffs). #}
with

runs as (
    select run_id, config from {{ ref('dim_runs') }}
),

leaves as (
    select
        runs.run_id,
        leaf.key,
        case when leaf.type = 'varchar' then leaf.value ->> '$' else leaf.value::varchar end
            as value,
        leaf.type as value_type
    from runs,
        lateral {{ json_leaves('runs.config') }} as leaf
)

select * from leaves
