{# A view over the lake: the canonical rollout names and types, nothing computed but
   casts. It must stay a view so the rollout text is never copied. #}
with

source as (
    {# Parts landed before group_id existed read it as null (lake_source
       gives every declared column). #}
    select * from {{ lake_source('rollouts') }}
),

renamed as (
    select
        ---------- ids
        cast(run_id as string) as run_id,
        cast(iteration as bigint) as iteration,
        prompt_hash,
        cast(sample_idx as bigint) as sample_idx,
        cast(data_idx as bigint) as data_idx,
        group_id,

        ---------- strings
        prompt,
        response,
        reward_case,
        instruction_ids,
        {{ as_json('instruction_kwargs') }} as instruction_kwargs,
        {{ as_json('ground_truth') }} as ground_truth,
        {{ as_json('extra') }} as extra,
        source_file,

        ---------- numerics
        cast(score as double) as score,
        cast(v_i as double) as v_i,
        cast(s_i as double) as s_i,
        cast(alpha_threshold as double) as alpha_threshold,
        cast(prompt_strict_acc as double) as prompt_strict_acc,
        cast(inst_strict_acc as double) as inst_strict_acc,
        cast(num_instructions as bigint) as num_instructions,
        cast(num_followed as bigint) as num_followed,
        cast(format_score as double) as format_score,
        cast(response_chars as bigint) as response_chars,
        cast(source_line as bigint) as source_line,
        rewards,

        ---------- booleans
        instruction_followed,

        ---------- timestamps
        {# The part's publish time, from its Hive folder: parts become visible
           in this order, which incremental models rely on. #}
        {{ lake_time('ingested_at') }} as ingested_at

    from source
)

select * from renamed
