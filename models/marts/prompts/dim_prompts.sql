{{ config(incremental_by(['prompt_hash'], merges_held_rows=true)) }}
{# A prompt's text and instructions never change. An incremental build reads
   only the parts published since this table last read the lake (macro
   newly_published) and merges what it finds into the rows it holds. The
   bound is a constant DuckDB uses to skip older parts unread. #}
with

stg_rollouts as (
    select
        prompt_hash,
        prompt,
        instruction_ids,
        num_instructions,
        data_idx,
        run_id,
        ingested_at
    from {{ ref('stg_rollouts') }}
    {% if is_incremental() %}
        where {{ newly_published('ingested_at', 'last_ingested_at') }}
    {% endif %}
),

seen as (
    select
        prompt_hash,
        {{ arg_min('data_idx', 'ingested_at') }} as data_idx,
        {{ arg_min('run_id', 'ingested_at') }} as first_run_id,
        any_value(prompt) as prompt,
        {{ arg_max('instruction_ids', list_size('instruction_ids')) }}
            as instruction_ids,
        max(num_instructions) as num_instructions,
        min(ingested_at) as first_ingested_at,
        max(ingested_at) as last_ingested_at
    from stg_rollouts
    group by 1
),

merged as (
    {% if is_incremental() %}
        {# A prompt this table holds keeps where it was first seen (its
           first data_idx that is not null, as a full build takes it); its
           instruction list and count take the longest and largest seen. #}
        select
            seen.prompt_hash,
            coalesce(held.data_idx, seen.data_idx) as data_idx,
            coalesce(held.first_run_id, seen.first_run_id) as first_run_id,
            coalesce(held.prompt, seen.prompt) as prompt,
            case
                when held.prompt_hash is null then seen.instruction_ids
                when
                    {{ list_size('seen.instruction_ids') }}
                    > {{ list_size('held.instruction_ids') }}
                    then seen.instruction_ids
                else held.instruction_ids
            end as instruction_ids,
            greatest(held.num_instructions, seen.num_instructions)
                as num_instructions,
            coalesce(held.first_ingested_at, seen.first_ingested_at)
                as first_ingested_at,
            greatest(held.last_ingested_at, seen.last_ingested_at)
                as last_ingested_at
        from seen
        left join {{ this }} as held
            on seen.prompt_hash = held.prompt_hash
    {% else %}
        select * from seen
    {% endif %}
),

final as (
    select
        ---------- ids
        prompt_hash,
        data_idx,
        first_run_id,

        ---------- strings
        prompt,
        left(prompt, 80) as prompt_preview,
        instruction_ids,

        ---------- numerics
        length(prompt) as prompt_chars,
        num_instructions,

        ---------- timestamps
        first_ingested_at,
        last_ingested_at

    from merged
)

select * from final
