{# A view over the lake: the canonical rollout names and types, nothing computed but
   casts. It must stay a view so the rollout text is never copied. #}
with

source as (
    select * from {{ lake_source('rollouts', {
        'run_id': 'varchar', 'ingested_at': 'varchar', 'iteration': 'bigint',
        'prompt_hash': 'varchar', 'sample_idx': 'bigint', 'data_idx': 'bigint',
        'prompt': 'varchar', 'response': 'varchar', 'score': 'double', 'v_i': 'double',
        's_i': 'double', 'alpha_threshold': 'double', 'reward_case': 'varchar',
        'prompt_strict_acc': 'double', 'inst_strict_acc': 'double',
        'num_instructions': 'bigint', 'num_followed': 'bigint', 'format_score': 'double',
        'instruction_ids': 'varchar[]', 'instruction_followed': 'boolean[]',
        'instruction_kwargs': 'varchar', 'ground_truth': 'varchar',
        'rewards': 'map(varchar, double)', 'extra': 'varchar', 'source_file': 'varchar',
        'source_line': 'bigint', 'response_chars': 'bigint', 'group_id': 'varchar'}) }}
    {# Parts landed before group_id existed read it as null; this empty relation
       gives the column when no part has it yet. #}
    union all by name
    select cast(null as varchar) as group_id
    where false
),

renamed as (
    select
        ---------- ids
        cast(run_id as varchar) as run_id,
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
        cast(instruction_kwargs as json) as instruction_kwargs,
        cast(ground_truth as json) as ground_truth,
        cast(extra as json) as extra,
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
