{# A view over the lake's per-sample rewards (a reward monitor's
   `reward_scores`): names and types, nothing computed. A step file written
   again with other values lands again; the newest part of a run's step and
   function is the value. #}
with

source as (
    select * from {{ lake_source('reward_samples') }}
),

renamed as (
    select
        ---------- ids
        cast(run_id as string) as run_id,
        cast(step as bigint) as step,
        reward_function,
        cast(sample_idx as bigint) as sample_idx,

        ---------- strings
        source,
        source_file,

        ---------- numerics
        cast(reward as double) as reward,

        ---------- timestamps
        {{ lake_time('ingested_at') }} as ingested_at

    from source
),

newest as (
    {{ newest_rows(
        'renamed',
        partition_by=['run_id', 'step', 'reward_function'],
        newest_by=['ingested_at'], keep_ties=true,
    ) }}
)

select * from newest
