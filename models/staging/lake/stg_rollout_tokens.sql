{# A view over the lake's per-token arrays (NeMo-RL's train_data_step files,
   prime-rl's traces): names and types, nothing computed. A view, so the arrays
   are read only by the models that need them, only for the parts they read.
   Parts landed before reference_logprobs and the policy span existed read
   them as null (lake_source gives every declared column). #}
with

source as (
    select * from {{ lake_source('rollout_tokens') }}
),

renamed as (
    select
        ---------- ids
        cast(run_id as string) as run_id,
        cast(iteration as bigint) as iteration,
        prompt_hash,
        cast(sample_idx as bigint) as sample_idx,

        ---------- strings
        source_file,

        ---------- numerics
        token_ids,
        rollout_logprobs,
        trainer_logprobs,
        advantages,
        reference_logprobs,
        cast(sample_loss_mask as double) as sample_loss_mask,
        cast(sequence_tokens as bigint) as sequence_tokens,
        cast(policy_start as bigint) as policy_start,
        cast(policy_end as bigint) as policy_end,
        cast(source_line as bigint) as source_line,

        ---------- booleans
        loss_mask,

        ---------- timestamps
        {{ lake_time('ingested_at') }} as ingested_at

    from source
)

select * from renamed
