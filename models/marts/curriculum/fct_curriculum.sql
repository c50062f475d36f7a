{# The next run's dataset under each `obs export curriculum` mode: the export
   reads one run and mode and writes it as it is. #}

with

fct_upsampling_candidates as (
    select
        run_id,
        prompt_hash,
        priority,
        upsampling_score,
        upsampling_score_scaled,
        final_score_factor_scaled,
        learning_rate_factor_scaled,
        forgetting_factor,
        is_stuck_solved,
        is_stuck_failed
    from {{ ref('fct_upsampling_candidates') }}
),

dim_prompts as (
    select
        prompt_hash,
        data_idx,
        prompt
    from {{ ref('dim_prompts') }}
),

fct_prompt_iteration as (
    select
        run_id,
        prompt_hash,
        iteration,
        mean_at_5
    from {{ ref('fct_prompt_iteration') }}
),

fct_difficulty_buckets as (
    select
        run_id,
        prompt_hash,
        iteration,
        bucket
    from {{ ref('fct_difficulty_buckets') }}
    where strategy = 'percentile'
),

last_mean_at_5 as (
    select
        run_id,
        prompt_hash,
        {{ arg_max('mean_at_5', 'iteration') }} as last_mean_at_5
    from fct_prompt_iteration
    group by 1, 2
),

last_bucket as (
    select
        run_id,
        prompt_hash,
        {{ arg_max('bucket', 'iteration') }} as difficulty_bucket
    from fct_difficulty_buckets
    group by 1, 2
),

prompts_joined as (
    select
        fct_upsampling_candidates.run_id,
        fct_upsampling_candidates.prompt_hash,
        dim_prompts.data_idx,
        dim_prompts.prompt,
        fct_upsampling_candidates.priority,
        last_bucket.difficulty_bucket,
        fct_upsampling_candidates.upsampling_score,
        fct_upsampling_candidates.upsampling_score_scaled,
        fct_upsampling_candidates.final_score_factor_scaled,
        fct_upsampling_candidates.learning_rate_factor_scaled,
        fct_upsampling_candidates.forgetting_factor,
        last_mean_at_5.last_mean_at_5,
        fct_upsampling_candidates.is_stuck_solved,
        fct_upsampling_candidates.is_stuck_failed,
        case
            when fct_upsampling_candidates.is_stuck_solved then 'stuck solved'
            when fct_upsampling_candidates.is_stuck_failed then 'stuck failed'
        end as stuck_reason
    from fct_upsampling_candidates
    inner join dim_prompts
        on fct_upsampling_candidates.prompt_hash = dim_prompts.prompt_hash
    inner join last_mean_at_5
        on
            fct_upsampling_candidates.run_id = last_mean_at_5.run_id
            and fct_upsampling_candidates.prompt_hash = last_mean_at_5.prompt_hash
    left join last_bucket
        on
            fct_upsampling_candidates.run_id = last_bucket.run_id
            and fct_upsampling_candidates.prompt_hash = last_bucket.prompt_hash
),

modes as (
    select modes.mode
    from (values ('upsample'), ('order'), ('drop-solved')) as modes (mode)
),

weighed as (
    {# upsample: 1 + max(upsampling_score_scaled, 0) (the seed's formula on
       the score scaled to the run's range), halved when stuck solved (no
       GRPO signal); order: easy to hard by the last mean@5, weight 1;
       drop-solved: every prompt but the stuck-solved ones, weight 1. #}
    select
        prompts_joined.*,
        modes.mode,
        modes.mode = 'drop-solved'
        and prompts_joined.is_stuck_solved as is_dropped,
        case
            when modes.mode = 'drop-solved' and prompts_joined.is_stuck_solved
                then 0.0
            when modes.mode = 'upsample'
                then
                    (
                        1.0
                        + greatest(prompts_joined.upsampling_score_scaled, 0.0)
                    )
                    / case when prompts_joined.is_stuck_solved then 2 else 1 end
            else 1.0
        end as weight,
        case
            when modes.mode = 'upsample'
                then
                    'priority '
                    || prompts_joined.priority
                    || ': final '
                    || {{ format_fixed(
                        'prompts_joined.final_score_factor_scaled', 2
                    ) }}
                    || ' + slope '
                    || {{ format_fixed(
                        'prompts_joined.learning_rate_factor_scaled', 2
                    ) }}
                    || ' + forgetting '
                    || {{ format_fixed(
                        'cast(prompts_joined.forgetting_factor as double)', 2
                    ) }}
                    || coalesce('; ' || prompts_joined.stuck_reason, '')
            when modes.mode = 'order'
                then
                    coalesce(prompts_joined.difficulty_bucket, 'no bucket')
                    || ' (mean@5 '
                    || coalesce(
                        {{ format_fixed('prompts_joined.last_mean_at_5', 2) }},
                        'none'
                    )
                    || ')'
            else coalesce(prompts_joined.stuck_reason, 'kept: still gives signal')
        end as reason
    from prompts_joined
    cross join modes
),

ordered as (
    select
        *,
        case
            when not is_dropped
                then
                    row_number()
                        over (
                            partition by run_id, mode, is_dropped
                            order by
                                case
                                    when mode = 'order'
                                        then -coalesce(last_mean_at_5, 0.0)
                                end,
                                prompt_hash
                        )
                    - 1
        end as order_position
    from weighed
),

final as (
    select
        ---------- ids
        run_id,
        prompt_hash,
        data_idx,

        ---------- strings
        mode,
        prompt,
        reason,
        priority,
        difficulty_bucket,

        ---------- numerics
        cast(weight as double) as weight,
        order_position,
        upsampling_score,
        upsampling_score_scaled,
        last_mean_at_5,

        ---------- booleans
        is_dropped,
        is_stuck_solved,
        is_stuck_failed

    from ordered
)

select * from final
