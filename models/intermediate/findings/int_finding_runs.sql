{{ config(incremental_by(['run_id'])) }}
{# The runs the findings judge, one row each: every run with a tracker
   history or rollouts, how much of it was judged (`run_parts`: the
   history's lake parts plus the run's rollouts in int_prompt_iteration
   plus the lake parts of its eval logs (the held-out metric) and of its
   monitor's per-sample rewards, a count that grows whenever any does; the
   findings' models read a run again when it changes), and the
   run's length over the metrics judged point by point, which sets what
   noise gives a run that long.

   A lone excursion is reported only when a run this long would not be
   expected to show one by chance. The largest of n standard normal draws
   is about sqrt(2 ln n); a run has six series scored this way (loss, grad
   norm, reward swings, extraction, two timings), and z against a 20-point
   trailing window has heavier tails than a normal's (hence 15% more): 4.3
   at 200 steps, 5.0 at 2,000, 5.5 at 20,000. #}
{%- set spike_z = var('spike_z') -%}
{#- (rollouts never leave the lake, and a file landed twice adds nothing,
    so their count grows with every rollout landed; the held-out metric's
    eval logs and the monitor's per-sample rewards are counted by their lake
    parts, for a run that has a history or rollouts: an eval log landed after
    the run was judged makes it judged again) -#}
-- depends_on: {{ ref('stg_eval_steps') }}
-- depends_on: {{ ref('stg_reward_samples') }}
{%- set parts -%}
    (select
        run_id,
        cast(sum(run_parts) as bigint) as run_parts
    from (
        select
            run_id,
            max(run_parts) as run_parts,
            1 as is_judged
        from {{ ref('int_metric_history') }}
        group by 1
        union all
        select
            run_id,
            sum(n_samples) as run_parts,
            1 as is_judged
        from {{ ref('int_prompt_iteration') }}
        group by 1
        union all
        select
            run_id,
            run_parts,
            0 as is_judged
        from {{ lake_run_parts('eval_steps') }} as eval_parts
        union all
        select
            run_id,
            run_parts,
            0 as is_judged
        from {{ lake_run_parts('reward_samples') }} as sample_parts
    ) as judged_parts
    where run_id is not null
    group by 1
    having max(is_judged) = 1)
{%- endset %}
with

judged_runs as (
    {{ changed_runs(parts, parts) }}
),

changed_history as (
    {{ changed_runs(ref('int_metric_history'), parts) }}
),

run_lengths as (
    select
        run_id,
        greatest(
            {{ spike_z }},
            1.15 * sqrt(2 * ln(6 * greatest(count(distinct step), 2)))
        ) as excursion_z,
        count(distinct step) as steps
    from changed_history
    where canonical_metric in {{ judged_metrics() }}
    group by 1
),

final as (
    select
        judged_runs.run_id,
        judged_runs.run_parts,
        run_lengths.steps,
        run_lengths.excursion_z
    from judged_runs
    left join run_lengths using (run_id)
)

select * from final
