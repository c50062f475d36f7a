{# An agent's eval statistics, one row per run and eval step (a baseline
   evaluated before training is step -1, is_baseline). Each statistic keeps
   the name the trainer's eval_step_*.json gives it and comes from the first
   source that has it: 1. the eval files (stg_eval_steps, eval-logs), 2. the
   console's eval block (trainer-log), 3. the tracker's `eval/*` keys (for a
   run that logs at least one of the agent's eval keys; the tracker's
   attempted, found and read values are rates, not counts). Derived here:
   the rates (attempted, found, read: counts over total_samples; the
   repeated-search share over all searches; the idk share) and each one's
   change since the run's previous eval step (baselines aside). The mean
   turns of correct and of "I don't know" answers are null when no sample
   gave that answer (trainers write 0). #}

{%- set statistics = [
    'correct_answers', 'total_samples', 'attempted_answer', 'found_correct_email',
    'read_correct_email', 'total_repeated_searches', 'total_unique_searches',
    'total_searches', 'num_idk', 'accuracy', 'avg_reward', 'median_reward',
    'std_reward', 'min_reward', 'max_reward', 'avg_turns_correct', 'avg_turns_idk',
    'avg_search_attempts', 'eval_time', 'beat_rate'] %}
{%- set counts = statistics[:9] %}
{#- tracker key -> statistic (the trainer's W&B keys) #}
{%- set tracker_keys = {
    'eval/accuracy': 'accuracy', 'eval/avg_reward': 'avg_reward',
    'eval/median_reward': 'median_reward', 'eval/std_reward': 'std_reward',
    'eval/min_reward': 'min_reward', 'eval/max_reward': 'max_reward',
    'eval/eval_time': 'eval_time', 'eval/beat_control_rate': 'beat_rate',
    'eval/total_repeated_searches': 'total_repeated_searches',
    'eval/total_unique_searches': 'total_unique_searches',
    'eval/total_searches': 'total_searches', 'eval/avg_turns_correct': 'avg_turns_correct',
    'eval/avg_turns_idk': 'avg_turns_idk', 'eval/avg_search_attempts': 'avg_search_attempts',
    'eval/num_idk': 'num_idk', 'eval/attempted_answer': 'tracker_attempted_rate',
    'eval/found_email': 'tracker_found_rate', 'eval/read_email': 'tracker_read_rate'} %}
{%- set tracker_rates = ['tracker_attempted_rate', 'tracker_found_rate', 'tracker_read_rate'] %}
{%- set agent_only = [
    'eval/total_repeated_searches', 'eval/total_unique_searches', 'eval/total_searches',
    'eval/avg_turns_correct', 'eval/avg_turns_idk', 'eval/avg_search_attempts',
    'eval/num_idk', 'eval/attempted_answer', 'eval/found_email', 'eval/read_email'] %}

with

logged as (
    select
        *,
        case source when 'eval-logs' then 1 else 2 end as source_rank
    from {{ ref('stg_eval_steps') }}
),

tracker_history as (
    select
        run_id,
        step,
        metric,
        value
    from {{ ref('fct_metric_history') }}
    where metric in (
        {%- for key in tracker_keys %}
            '{{ key }}'{{ "," if not loop.last }}
        {%- endfor %}
    )
),

tracker_runs as (
    select distinct run_id
    from tracker_history
    where metric in (
        {%- for key in agent_only %}
            '{{ key }}'{{ "," if not loop.last }}
        {%- endfor %}
    )
),

from_tracker as (
    select
        run_id,
        tracker_history.step,
        false as is_baseline,
        'tracker' as source,
        3 as source_rank,
    {%- for key, name in tracker_keys.items() %}
        max(tracker_history.value) filter (where tracker_history.metric = '{{ key }}')
            as {{ name }}
        {{- "," if not loop.last }}
    {%- endfor %}
    from tracker_history
    semi join tracker_runs using (run_id)
    group by 1, 2
),

{# Both sources with the same columns (null where a source has none), the
   types as the union makes them (the tracker's values are doubles). #}
sources as (
    select
        run_id,
        step,
        is_baseline,
        source,
        source_rank,
        {%- for name in statistics %}
            {{ name }},
        {%- endfor %}
        {%- for name in tracker_rates %}
            cast(null as double) as {{ name }},
        {%- endfor %}
        extra,
        has_baseline,
        source_file
    from logged
    union all
    select
        run_id,
        step,
        is_baseline,
        source,
        source_rank,
        {%- for name in statistics %}
            {{ name if name in tracker_keys.values() else 'cast(null as bigint) as ' ~ name }},
        {%- endfor %}
        {%- for name in tracker_rates %}
            {{ name }},
        {%- endfor %}
        {{ as_json('cast(null as string)') }} as extra,
        cast(null as boolean) as has_baseline,
        cast(null as string) as source_file
    from from_tracker
),

merged as (
    select
        run_id,
        step,
        is_baseline,
        {{ arg_min('source', 'source_rank') }} as basis,
        {%- for name in statistics + tracker_rates %}
            {{ arg_min(name, 'source_rank') }} filter (where {{ name }} is not null)
                as {{ name }},
        {%- endfor %}
        {{ arg_min('extra', 'source_rank') }} filter (where extra is not null) as extra,
        bool_or(has_baseline) as has_baseline,
        {{ arg_min('source_file', 'source_rank') }} filter (where source_file is not null)
            as source_file
    from sources
    group by 1, 2, 3
),

derived as (
    select
        run_id,
        step,
        is_baseline,
        basis,
        {%- for name in counts if name != 'total_repeated_searches' %}
            cast({{ name }} as bigint) as {{ name }},
        {%- endfor %}
        coalesce(accuracy, correct_answers / nullif(total_samples, 0)) as accuracy,
        cast(coalesce(
            total_repeated_searches, total_searches - total_unique_searches
        ) as bigint) as total_repeated_searches,
        {# trainers write 0 for the mean turns of an answer no sample gave #}
        case when correct_answers = 0 then null else avg_turns_correct end
            as avg_turns_correct,
        case when num_idk = 0 then null else avg_turns_idk end as avg_turns_idk,
        {%- for name in statistics + tracker_rates
            if name not in counts + ['accuracy', 'avg_turns_correct', 'avg_turns_idk'] %}
            {{ name }},
        {%- endfor %}
        extra,
        has_baseline,
        source_file,
        coalesce(attempted_answer / nullif(total_samples, 0), tracker_attempted_rate)
            as attempted_rate,
        coalesce(found_correct_email / nullif(total_samples, 0), tracker_found_rate)
            as found_rate,
        coalesce(read_correct_email / nullif(total_samples, 0), tracker_read_rate)
            as read_rate,
        coalesce(
            total_repeated_searches, total_searches - total_unique_searches
        ) / nullif(total_searches, 0) as repeated_search_share,
        num_idk / nullif(total_samples, 0) as idk_share
    from merged
),

changes as (
    select
        *,
        lag(step) over by_step as previous_step,
        accuracy - lag(accuracy) over by_step as accuracy_change,
        attempted_rate - lag(attempted_rate) over by_step as attempted_rate_change,
        found_rate - lag(found_rate) over by_step as found_rate_change,
        read_rate - lag(read_rate) over by_step as read_rate_change,
        repeated_search_share - lag(repeated_search_share) over by_step
            as repeated_search_share_change,
        idk_share - lag(idk_share) over by_step as idk_share_change,
        avg_reward - lag(avg_reward) over by_step as avg_reward_change
    from derived
    window by_step as (partition by run_id, is_baseline order by step)
),

final as (
    select
        ---------- ids
        run_id,
        step,
        previous_step,

        ---------- strings
        basis,
        source_file,
        extra,

        ---------- numerics
        {%- for name in statistics %}
            {{ name }},
        {%- endfor %}
        attempted_rate,
        found_rate,
        read_rate,
        repeated_search_share,
        idk_share,
        accuracy_change,
        attempted_rate_change,
        found_rate_change,
        read_rate_change,
        repeated_search_share_change,
        idk_share_change,
        avg_reward_change,

        ---------- booleans
        is_baseline,
        has_baseline
    from changes
)

select * from final
