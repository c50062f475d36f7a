{{ config(alias='rejects') }}
{# A view over the lake's rejected rows, named `rejects` in the warehouse
   (`obs sql "select * from rejects"`): names and types, nothing computed.
   It reads the lake through the lake source like every staging view, so it
   follows OBS_LAKE wherever the lake is. #}
with

source as (
    select * from {{ lake_source('_rejects') }}
),

renamed as (
    select
        ---------- ids
        cast(run_id as string) as run_id,

        ---------- strings
        table_name,
        source_file,
        reason,
        raw,

        ---------- numerics
        cast(source_line as bigint) as source_line,

        ---------- timestamps
        {{ lake_time('ingested_at') }} as ingested_at

    from source
)

select * from renamed
