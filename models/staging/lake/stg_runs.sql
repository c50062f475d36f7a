{# A view over the lake's run rows: one row per run and ingest that changed it. #}
with

source as (
    select * from {{ lake_source('runs') }}
),

renamed as (
    select
        ---------- ids
        cast(run_id as string) as run_id,
        record_hash,

        ---------- strings
        source,
        project,
        entity,
        name,
        state,
        tags,
        {{ as_json('config') }} as config,
        {{ as_json('summary') }} as summary,
        {{ as_json('artifacts') }} as artifacts,
        source_file,

        ---------- timestamps
        cast(created_at as timestamp) as created_at,
        {{ lake_time('ingested_at') }} as ingested_at

    from source
)

select * from renamed
