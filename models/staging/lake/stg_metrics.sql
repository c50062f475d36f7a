{# A view over the lake's tracker histories: names and types, nothing computed.
   A run holds one value per step and key; a value that changed (a restarted
   trainer logged the step again) lands again, and the newest is the value.
   run_parts counts the run's parts read, so the marts built by run can tell
   when a run received a part (macro changed_runs). #}
with

source as (
    select * from {{ lake_source('metrics') }}
),

renamed as (
    select
        ---------- ids
        cast(run_id as string) as run_id,
        cast(step as bigint) as step,
        key as metric,

        ---------- strings
        source,
        source_file,

        ---------- numerics
        cast(value as double) as value,

        ---------- timestamps
        {# ingest keeps wall times within 1970..2200; the guard keeps any other lake sound #}
        case
            when wall_time between 0 and 7258118400
                then {{ epoch_timestamp('wall_time') }}
        end as wall_time,
        {{ lake_time('ingested_at') }} as ingested_at,
        {{ count_distinct_over('ingested_at', ['run_id']) }} as run_parts

    from source
),

newest as (
    {{ newest_rows(
        'renamed',
        partition_by=['run_id', 'step', 'metric'],
        newest_by=['ingested_at'],
    ) }}
)

select * from newest
