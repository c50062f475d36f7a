{# Turn-by-turn advantages of a multi-turn agent's rollouts, one row per run,
   iteration, group, rollout and turn (turns numbered from 1, as the
   trainer's console table numbers them; a rollout that stopped earlier has
   no row for the later turns). Where from, per (run, iteration):
   1. rollouts (int_agent_rollouts): a rollout's given `turn_advantages`
      are kept as they are (is_given); a rollout with only `turn_rewards`
      gets obs's rule: among the group's rollouts that reached turn t,
      (r - mean_t) / (std_t + 1e-8), with the population std, and 0 when
      only one rollout reached the turn. (The trainer derived its own from
      tool actions, so given advantages always win.)
   2. else the trainer's console tables (stg_turn_advantages), as printed. #}
with

agent as (
    select *
    from {{ ref('int_agent_rollouts') }}
    where group_id is not null
),

given_turns as (
    select
        run_id,
        iteration,
        group_id,
        group_sample_idx as sample_idx,
        prompt_hash,
        turn_advantages,
        {{ list_positions('turn_advantages') }} as turn
    from agent
    where turn_advantages is not null
),

given as (
    select
        run_id,
        iteration,
        group_id,
        sample_idx,
        prompt_hash,
        turn,
        {{ list_element('turn_advantages', 'turn') }} as advantage
    from given_turns
),

reward_positions as (
    select
        run_id,
        iteration,
        group_id,
        group_sample_idx as sample_idx,
        prompt_hash,
        turn_advantages is not null as has_given,
        turn_rewards,
        {{ list_positions('turn_rewards') }} as turn
    from agent
    where turn_rewards is not null
),

reward_turns as (
    select
        run_id,
        iteration,
        group_id,
        sample_idx,
        prompt_hash,
        has_given,
        turn,
        {{ list_element('turn_rewards', 'turn') }} as turn_reward
    from reward_positions
),

reward_stats as (
    select
        *,
        {# exact: it decides an advantage's sign, 0 for a reward equal to
           the mean (rounded to 12 decimals too: a mean of 0 by the math
           comes out as 1e-24) #}
        {{ exact_float(round_to('avg(turn_reward) over turn_group', 12)) }}
            as turn_mean,
        stddev_pop(turn_reward) over turn_group
            as turn_std,
        min(turn_reward) over turn_group as turn_min,
        max(turn_reward) over turn_group as turn_max,
        count(*) over turn_group as rollouts_at_turn
    from reward_turns
    window turn_group as (partition by run_id, iteration, group_id, turn)
),

from_rewards as (
    select
        run_id,
        iteration,
        group_id,
        sample_idx,
        prompt_hash,
        turn,
        {# Exactly 0 where the math says 0: one rollout at the turn, or
           rewards all equal (their mean may differ from them in the last
           bit, by the order it was summed in). #}
        case
            when rollouts_at_turn = 1 or turn_min = turn_max then 0.0
            else (turn_reward - turn_mean) / (turn_std + 1e-8)
        end as advantage,
        turn_reward,
        rollouts_at_turn
    from reward_stats
    where not has_given
),

from_rollouts as (
    select
        given.run_id,
        given.iteration,
        given.group_id,
        given.sample_idx,
        given.prompt_hash,
        given.turn,
        given.advantage,
        true as is_given,
        reward_stats.turn_reward
    from given
    left join reward_stats
        on
            given.run_id = reward_stats.run_id
            and given.iteration = reward_stats.iteration
            and given.group_id = reward_stats.group_id
            and given.sample_idx = reward_stats.sample_idx
            and given.turn = reward_stats.turn
    union all
    select
        run_id,
        iteration,
        group_id,
        sample_idx,
        prompt_hash,
        turn,
        advantage,
        false as is_given,
        turn_reward
    from from_rewards
),

from_log as (
    select
        logged.run_id,
        logged.step as iteration,
        logged.group_id,
        logged.sample_idx,
        logged.turn,
        logged.advantage,
        true as is_given
    from {{ ref('stg_turn_advantages') }} as logged
    anti join (  -- noqa: ST05
        {#- A subquery, not a CTE (hence the noqa): as a CTE DuckDB plans the
            turn statistics' sums in another order, and an advantage of exactly
            0 may come out as -1e-16 (which negative_share counts). #}
        select distinct
            run_id,
            iteration
        from from_rollouts
    ) as covered
        on logged.run_id = covered.run_id and logged.step = covered.iteration
),

both_sources as (
    select
        run_id,
        iteration,
        group_id,
        sample_idx,
        turn,
        prompt_hash,
        'rollouts' as source,
        advantage,
        turn_reward,
        is_given
    from from_rollouts
    union all
    select
        run_id,
        iteration,
        group_id,
        sample_idx,
        turn,
        null as prompt_hash,
        'trainer-log' as source,
        advantage,
        null as turn_reward,
        is_given
    from from_log
),

final as (
    select
        ---------- ids
        run_id,
        iteration,
        group_id,
        sample_idx,
        turn,
        prompt_hash,

        ---------- strings
        source,

        ---------- numerics
        advantage,
        turn_reward,
        count(*) over (partition by run_id, iteration, group_id, turn) as rollouts_at_turn,

        ---------- booleans
        is_given
    from both_sources
)

select * from final
