{{ config(incremental_by(['run_id', 'step'])) }}
{# Every per-sample reward of every reward function, one row per run, step,
   sample and function, from the richest source a step has:
   1. rollouts with per-function rewards (a table's or TRL's reward columns,
      a dump's `rewards` object; the seed-style dumps' V_i, S_i and
      format_score components when the rollout carries V_i or S_i), the
      step being the rollout's iteration and the samples numbered by prompt
      and sample order;
   2. else a reward monitor's `reward_scores` (stg_reward_samples).
   source_weight is the function's weight where the rollout names it (a
   prime-rl trace's extra.reward_weights); function_position its place
   among the rollout's functions, from 1 (a config's reward_weights list is
   in that order: TRL's reward columns).
   Built by step: a build reads again only the (run, step) groups of either
   source that received a lake part since the last one, and replaces them
   whole. ingested_through is the newest part of either source the step's
   rows were read with, so a step is read again when either grows. #}

{%- set groups = {} -%}
{%- if is_incremental() -%}
    {%- set groups = merge_groups(
        changed_groups(ref('stg_rollouts'), ['run_id', 'iteration']),
        changed_groups(ref('stg_reward_samples'), ['run_id', 'step'])
    ) -%}
{%- endif %}

with

rollouts as (
    select
        upstream.run_id,
        upstream.iteration as step,
        upstream.prompt_hash,
        upstream.sample_idx,
        upstream.rewards,
        upstream.v_i,
        upstream.s_i,
        upstream.format_score,
        {{ json_at('upstream.extra', name="'reward_weights'") }} as reward_weights,
        upstream.ingested_at
    from {{ ref('stg_rollouts') }} as upstream
    where (
        cardinality(upstream.rewards) > 0
        or upstream.v_i is not null
        or upstream.s_i is not null
    )
    {%- if is_incremental() %}
        and {{ groups_predicate(groups, ['run_id', 'iteration']) }}
    {%- endif %}
),

rollouts_numbered as (
    select
        *,
        row_number() over (
            partition by run_id, step order by prompt_hash, sample_idx
        ) - 1 as sample_number
    from rollouts
),

{# a rollout's rewards: its functions' (the rewards map), else its seed-style
   components #}
rollout_components as (
    select
        run_id,
        step,
        sample_number as sample_idx,
        reward_weights,
        ingested_at,
        case
            when cardinality(rewards) > 0
                then {{ list_map('map_entries(rewards)', 'entry', struct_from({
                    'reward_function': 'entry.key', 'reward': 'entry.value'
                })) }}
            else {{ list_where(list_of([
                struct_from({'reward_function': "'V_i'", 'reward': 'v_i'}),
                struct_from({'reward_function': "'S_i'", 'reward': 's_i'}),
                struct_from({'reward_function': "'format_score'", 'reward': 'format_score'}),
            ]), 'component', 'component.reward is not null') }}
        end as components
    from rollouts_numbered
),

rollout_positions as (
    select
        *,
        {{ list_positions('components') }} as component_position
    from rollout_components
),

rollout_rewards as (
    select
        run_id,
        step,
        sample_idx,
        {{ list_element('components', 'component_position') }}.reward_function
            as reward_function,
        {{ list_element('components', 'component_position') }}.reward as reward,
        try_cast({{ json_at(
            'reward_weights',
            name=list_element('components', 'component_position') ~ '.reward_function'
        ) }} as double) as source_weight,
        component_position as function_position,
        'rollouts' as source,
        1 as source_rank,
        ingested_at
    from rollout_positions
),

monitor_rewards as (
    select
        upstream.run_id,
        upstream.step,
        upstream.sample_idx,
        upstream.reward_function,
        upstream.reward,
        cast(null as double) as source_weight,
        cast(null as bigint) as function_position,
        'reward-monitor' as source,
        2 as source_rank,
        upstream.ingested_at
    from {{ ref('stg_reward_samples') }} as upstream
    {%- if is_incremental() %}
    where {{ groups_predicate(groups, ['run_id', 'step']) }}
    {%- endif %}
),

both_sources as (
    select
        run_id,
        step,
        sample_idx,
        reward_function,
        reward,
        source_weight,
        function_position,
        source,
        source_rank,
        ingested_at
    from rollout_rewards
    union all
    select
        run_id,
        step,
        sample_idx,
        reward_function,
        reward,
        source_weight,
        function_position,
        source,
        source_rank,
        ingested_at
    from monitor_rewards
),

ranked as (
    select
        run_id,
        step,
        sample_idx,
        reward_function,
        reward,
        source_weight,
        function_position,
        source,
        source_rank,
        max(ingested_at) over (partition by run_id, step) as ingested_through,
        min(source_rank) over (partition by run_id, step) as best_rank
    from both_sources
    where reward is not null
),

{# the step's richest source only #}
picked as (
    select *
    from ranked
    where source_rank = best_rank
),

final as (
    select
        ---------- ids
        run_id,
        step,
        sample_idx,
        reward_function,

        ---------- strings
        source,

        ---------- numerics
        reward,
        source_weight,
        function_position,

        ---------- timestamps
        ingested_through
    from picked
)

select * from final
