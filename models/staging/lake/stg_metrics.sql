{# A view over the lake's tracker histories: names and types, nothing computed. #}
with

source as (
    select * from {{ lake_source('metrics', {
        'run_id': 'varchar', 'ingested_at': 'varchar', 'step': 'bigint', 'key': 'varchar',
        'value': 'double', 'wall_time': 'double', 'source': 'varchar',
        'source_file': 'varchar'}) }}
),

renamed as (
    select
        ---------- ids
        cast(run_id as varchar) as run_id,
        cast(step as bigint) as step,
        key as metric,

        ---------- strings
        source,
        source_file,

        ---------- numerics
        cast(value as double) as value,

        ---------- timestamps
        case when wall_time is not null then to_timestamp(wall_time)::timestamp end as wall_time,
        strptime(ingested_at, '%Y%m%dT%H%M%S%fZ') as ingested_at

    from source
)

select * from renamed
