{{ config(incremental_by(['run_id', 'iteration'])) }}
{# A multi-turn agent's rollouts, one row per rollout that carries any of the
   agent's fields in `extra` (turn_advantages, turn_rewards, num_turns,
   max_turns, exit_reason, total_tokens, trainable_tokens, or a `messages`
   list with roles), with those fields typed; rollouts of a single-turn run
   have no row. Ingest has checked the fields (lists of finite numbers, whole
   counts >= 0, text), so the casts here cannot fail.
   - group_id: the rollout's `group_id`, else its prompt (GRPO's group);
     group_sample_idx numbers the group's rollouts from 0 (by prompt, then
     the prompt's sample order), as the console's advantage table does.
   - num_turns: the count given, else the assistant messages of `messages`,
     else the length of turn_advantages, else of turn_rewards.
   - finished_early: num_turns < max_turns, or an exit_reason other than
     exhausted; null when neither can be told.
   Built by iteration: a build reads again only the (run, iteration) groups
   that received a lake part since the last one. An iteration with rollouts
   but no agentic one keeps one marker row (group_id and prompt_hash null),
   so that later builds know it was read: every reader filters
   `group_id is not null`. #}

{%- set agent_keys = [
    'turn_advantages', 'turn_rewards', 'num_turns', 'max_turns', 'exit_reason',
    'messages', 'total_tokens', 'trainable_tokens',
] %}

with

changed as (
    select
        run_id,
        iteration,
        prompt_hash,
        sample_idx,
        score,
        extra,
        ingested_at
    from (
        {{ changed_rows(ref('stg_rollouts'), ['run_id', 'iteration']) }}
    ) as upstream
),

rollouts as (
    select *
    from changed
    {# a cheap screen on the text before any JSON is parsed #}
    where
        extra is not null
        and (
            {%- for key in agent_keys %}
                {{ "or " if not loop.first }}contains(cast(extra as string), '"{{ key }}"')
            {%- endfor %}
        )
),

typed as (
    select
        run_id,
        iteration,
        prompt_hash,
        sample_idx,
        score,
        {{ json_text('extra', 'group_id') }} as given_group_id,
        try_cast({{ json_text('extra', 'num_turns') }} as bigint) as given_num_turns,
        try_cast({{ json_text('extra', 'max_turns') }} as bigint) as max_turns,
        lower(trim({{ json_text('extra', 'exit_reason') }})) as exit_reason,
        try_cast({{ json_text('extra', 'total_tokens') }} as bigint) as total_tokens,
        try_cast(
            {{ json_text('extra', 'trainable_tokens') }} as bigint
        ) as trainable_tokens,
        {{ json_number_list('extra', 'turn_advantages') }} as turn_advantages,
        {{ json_number_list('extra', 'turn_rewards') }} as turn_rewards,
        {{ json_list_texts('extra', 'messages', 'role') }} as message_roles,
        ingested_at
    from rollouts
),

counted as (
    select
        *,
        case
            when
                {{ list_size(list_where('message_roles', 'role', 'role is not null')) }} > 0
                then {{ list_size(list_where('message_roles', 'role', "role = 'assistant'")) }}
        end as assistant_messages
    from typed
),

agentic as (
    select
        *,
        coalesce(
            given_num_turns,
            assistant_messages,
            case
                when turn_advantages is not null
                    then {{ list_size('turn_advantages') }}
            end,
            case when turn_rewards is not null then {{ list_size('turn_rewards') }} end
        ) as num_turns
    from counted
    where
        given_num_turns is not null
        or max_turns is not null
        or exit_reason is not null
        or total_tokens is not null
        or trainable_tokens is not null
        or turn_advantages is not null
        or turn_rewards is not null
        or assistant_messages is not null
),

{# an iteration with no agentic rollout: one marker row #}
{% set columns = [
    'prompt_hash', 'sample_idx', 'score', 'given_group_id', 'given_num_turns',
    'max_turns', 'exit_reason', 'total_tokens', 'trainable_tokens',
    'turn_advantages', 'turn_rewards', 'message_roles', 'assistant_messages',
    'num_turns',
] %}

rows_and_markers as (
    select
        run_id,
        iteration,
        {%- for column in columns %}
            {{ column }},
        {%- endfor %}
        ingested_at
    from agentic
    union all
    select
        markers.run_id,
        markers.iteration,
        {%- for column in columns %}
            null as {{ column }},
        {%- endfor %}
        markers.ingested_at
    from (
        select
            changed.run_id,
            changed.iteration,
            max(changed.ingested_at) as ingested_at
        from changed
        anti join agentic
            on changed.run_id = agentic.run_id and changed.iteration = agentic.iteration
        group by 1, 2
    ) as markers
),

final as (
    select
        ---------- ids
        run_id,
        iteration,
        prompt_hash,
        sample_idx,
        coalesce(given_group_id, prompt_hash) as group_id,
        case when prompt_hash is not null then row_number() over (
            partition by run_id, iteration, coalesce(given_group_id, prompt_hash)
            order by prompt_hash, sample_idx
        ) - 1 end as group_sample_idx,

        ---------- strings
        exit_reason,

        ---------- numerics
        score,
        num_turns,
        max_turns,
        total_tokens,
        trainable_tokens,
        turn_advantages,
        turn_rewards,

        ---------- booleans
        given_group_id is not null as has_group_id,
        case
            when num_turns < max_turns then true
            when exit_reason is not null and exit_reason != 'exhausted' then true
            when (num_turns is not null and max_turns is not null) or exit_reason is not null
                then false
        end as finished_early,

        ---------- timestamps
        max(ingested_at) over (partition by run_id, iteration) as ingested_through
    from rows_and_markers
)

select * from final
