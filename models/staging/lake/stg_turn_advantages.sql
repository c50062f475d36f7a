{# A view over the lake's turn-by-turn advantage tables (a trainer's console
   log): names and types, nothing computed. A table is one block (its step
   and group); one logged again with other values lands anew, and only the
   newest block of a step and group is kept. #}
with

source as (
    select * from {{ lake_source('turn_advantages') }}
),

renamed as (
    select
        ---------- ids
        cast(run_id as string) as run_id,
        cast(step as bigint) as step,
        group_id,
        cast(sample_idx as bigint) as sample_idx,
        cast(turn as bigint) as turn,
        record_hash,

        ---------- strings
        source,
        source_file,

        ---------- numerics
        cast(groups_in_step as bigint) as groups_in_step,
        cast(advantage as double) as advantage,
        cast(source_line as bigint) as source_line,

        ---------- timestamps
        {{ lake_time('ingested_at') }} as ingested_at

    from source
),

newest as (
    {{ newest_rows(
        'renamed',
        partition_by=['run_id', 'step', 'group_id', 'source'],
        newest_by=['ingested_at', 'source_file', 'record_hash'], keep_ties=true,
    ) }}
)

select * from newest
