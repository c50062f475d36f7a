{# A view over the lake's eval statistics: names and types, nothing computed.
   An eval file (or a console's eval block) landed again with other values
   lands anew; the newest part of a run's step and source is the value. #}
with

source as (
    select * from {{ lake_source('eval_steps') }}
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
        {{ as_json('extra') }} as extra,

        ---------- numerics
        cast(correct_answers as bigint) as correct_answers,
        cast(total_samples as bigint) as total_samples,
        cast(attempted_answer as bigint) as attempted_answer,
        cast(found_correct_email as bigint) as found_correct_email,
        cast(read_correct_email as bigint) as read_correct_email,
        cast(total_repeated_searches as bigint) as total_repeated_searches,
        cast(total_unique_searches as bigint) as total_unique_searches,
        cast(total_searches as bigint) as total_searches,
        cast(num_idk as bigint) as num_idk,
        cast(accuracy as double) as accuracy,
        cast(avg_reward as double) as avg_reward,
        cast(median_reward as double) as median_reward,
        cast(std_reward as double) as std_reward,
        cast(min_reward as double) as min_reward,
        cast(max_reward as double) as max_reward,
        cast(avg_turns_correct as double) as avg_turns_correct,
        cast(avg_turns_idk as double) as avg_turns_idk,
        cast(avg_search_attempts as double) as avg_search_attempts,
        cast(eval_time as double) as eval_time,
        cast(beat_rate as double) as beat_rate,
        cast(source_line as bigint) as source_line,

        ---------- booleans
        coalesce(cast(is_baseline as boolean), false) as is_baseline,
        cast(has_baseline as boolean) as has_baseline,

        ---------- timestamps
        {{ lake_time('ingested_at') }} as ingested_at

    from source
),

newest as (
    {{ newest_rows(
        'renamed',
        partition_by=['run_id', 'step', 'is_baseline', 'source'],
        newest_by=['ingested_at', 'source_file'],
    ) }}
)

select * from newest
