{{ config(incremental_by(['run_id', 'iteration'])) }}
{# Incremental by (run, iteration): every strategy buckets a prompt against
   its own iteration only. #}
with

fct_prompt_iteration as (
    select
        run_id,
        iteration,
        prompt_hash,
        mean_at_5,
        mean_score,
        success_rate,
        ingested_through
    from ({{
        changed_rows(ref('fct_prompt_iteration'), upstream_time='ingested_through')
    }})
),

int_difficulty_clusters as (
    select int_difficulty_clusters.*
    from {{ ref('int_difficulty_clusters') }} as int_difficulty_clusters
    semi join fct_prompt_iteration
        on
            int_difficulty_clusters.run_id = fct_prompt_iteration.run_id
            and int_difficulty_clusters.iteration = fct_prompt_iteration.iteration
),

cut_points as (
    {# Quartile cut points per run and iteration. A prompt's bucket depends
       only on its value and these, so equal values share a bucket. #}
    select
        run_id,
        iteration,
        {{ quantile('mean_at_5', 0.25) }} as mean_at_5_q1,
        {{ quantile('mean_at_5', 0.5) }} as mean_at_5_q2,
        {{ quantile('mean_at_5', 0.75) }} as mean_at_5_q3,
        {{ quantile('mean_score', 0.25) }} as mean_score_q1,
        {{ quantile('mean_score', 0.5) }} as mean_score_q2,
        {{ quantile('mean_score', 0.75) }} as mean_score_q3
    from fct_prompt_iteration
    group by 1, 2
),

prompts_with_cut_points as (
    select
        fct_prompt_iteration.*,
        cut_points.mean_at_5_q1,
        cut_points.mean_at_5_q2,
        cut_points.mean_at_5_q3,
        cut_points.mean_score_q1,
        cut_points.mean_score_q2,
        cut_points.mean_score_q3
    from fct_prompt_iteration
    inner join cut_points
        on
            fct_prompt_iteration.run_id = cut_points.run_id
            and fct_prompt_iteration.iteration = cut_points.iteration
),

percentile_buckets as (
    select
        run_id,
        iteration,
        prompt_hash,
        'percentile' as strategy,
        case
            when mean_at_5 <= mean_at_5_q1 then 'hard'
            when mean_at_5 <= mean_at_5_q2 then 'medium-hard'
            when mean_at_5 <= mean_at_5_q3 then 'medium-easy'
            else 'easy'
        end as bucket
    from prompts_with_cut_points
),

pass_rate_buckets as (
    {# the share of the prompt's rollouts that succeed under the build's
       one success rule (var success), as every count of solved prompts;
       the strategy keeps the seed's name #}
    select
        run_id,
        iteration,
        prompt_hash,
        'pass_rate' as strategy,
        case
            when success_rate = 0 then 'very_hard'
            when success_rate <= 0.25 then 'hard'
            when success_rate <= 0.5 then 'medium'
            when success_rate <= 0.75 then 'easy'
            else 'very_easy'
        end as bucket
    from prompts_with_cut_points
),

mean_reward_buckets as (
    select
        run_id,
        iteration,
        prompt_hash,
        'mean_reward' as strategy,
        case
            when mean_score <= mean_score_q1 then 'very_hard'
            when mean_score <= mean_score_q2 then 'hard'
            when mean_score <= mean_score_q3 then 'medium'
            else 'easy'
        end as bucket
    from prompts_with_cut_points
),

adaptive_buckets as (
    select
        run_id,
        iteration,
        prompt_hash,
        'adaptive' as strategy,
        bucket
    from int_difficulty_clusters
),

unioned as (
    select * from percentile_buckets
    union all
    select * from pass_rate_buckets
    union all
    select * from mean_reward_buckets
    union all
    select * from adaptive_buckets
),

watermarks as (
    select
        run_id,
        iteration,
        max(ingested_through) as ingested_through
    from fct_prompt_iteration
    group by 1, 2
),

final as (
    select
        unioned.*,
        watermarks.ingested_through
    from unioned
    inner join watermarks
        on
            unioned.run_id = watermarks.run_id
            and unioned.iteration = watermarks.iteration
)

select * from final
