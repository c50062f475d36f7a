{{
    config(
        materialized='incremental',
        incremental_strategy='append',
    )
}}
{# A prompt's text and instructions never change, so new builds only add the
   hashes not seen before, reading just the rows published since the last new
   prompt (less the look-back window: see fct_prompt_iteration). #}
with

stg_rollouts as (
    select
        prompt_hash,
        prompt,
        instruction_ids,
        num_instructions,
        data_idx,
        run_id,
        iteration,
        ingested_at
    from {{ ref('stg_rollouts') }}
    {% if is_incremental() %}
        where
            ingested_at
            > (select max(first_ingested_at) from {{ this }})
            - to_seconds({{ var('incremental_lookback_seconds') }})
    {% endif %}
),

new_prompts as (
    select
        ---------- ids
        prompt_hash,
        arg_min(data_idx, ingested_at) as data_idx,
        arg_min(run_id, ingested_at) as first_run_id,

        ---------- strings
        any_value(prompt) as prompt,
        left(any_value(prompt), 80) as prompt_preview,
        arg_max(instruction_ids, len(coalesce(instruction_ids, [])))
            as instruction_ids,

        ---------- numerics
        length(any_value(prompt)) as prompt_chars,
        max(num_instructions) as num_instructions,

        ---------- timestamps
        min(ingested_at) as first_ingested_at

    from stg_rollouts
    group by 1
)

select new_prompts.*
from new_prompts
{% if is_incremental() %}
    where new_prompts.prompt_hash not in (select prompt_hash from {{ this }})
{% endif %}
