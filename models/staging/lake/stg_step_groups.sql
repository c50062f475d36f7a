{# A view over the lake's training-step group summaries (a trainer's console
   log): names and types, nothing computed. A step logged again with other
   values (a restarted trainer) lands anew; the newest part is the value. #}
with

source as (
    select * from {{ lake_source('step_groups') }}
),

renamed as (
    select
        ---------- ids
        cast(run_id as string) as run_id,
        cast(step as bigint) as step,
        record_hash,

        ---------- strings
        source,
        source_file,

        ---------- numerics
        cast(max_steps as bigint) as max_steps,
        cast(groups_total as bigint) as groups_total,
        cast(groups_kept as bigint) as groups_kept,
        cast(groups_filtered as bigint) as groups_filtered,
        cast(rollouts as bigint) as rollouts,
        cast(finished_early as bigint) as finished_early,
        cast(rollout_time_s as double) as rollout_time_s,
        cast(training_time_s as double) as training_time_s,
        cast(total_tokens as bigint) as total_tokens,
        cast(trainable_tokens as bigint) as trainable_tokens,
        cast(grad_norm as double) as grad_norm,
        cast(total_loss as double) as total_loss,
        cast(rollouts_per_query as bigint) as rollouts_per_query,
        cast(queries as bigint) as queries,
        cast(source_line as bigint) as source_line,

        ---------- booleans
        cast(all_filtered as boolean) as all_filtered,

        ---------- timestamps
        {{ lake_time('ingested_at') }} as ingested_at

    from source
),

newest as (
    {{ newest_rows(
        'renamed',
        partition_by=['run_id', 'step', 'source'],
        newest_by=['ingested_at', 'source_file'],
    ) }}
)

select * from newest
