{{ config(incremental_by(['run_id', 'iteration'])) }}
with

int_rollouts_scored as (
    select
        run_id,
        iteration,
        prompt_hash,
        sample_idx,
        v_i,
        s_i,
        score,
        alpha_threshold,
        reward_case,
        ingested_at
    from ({{ changed_rows(ref('int_rollouts_scored'), lookup=ref('stg_rollouts')) }})
    where v_i is not null and s_i is not null
),

ranked as (
    select
        *,
        row_number() over (
            partition by run_id, iteration
            order by
                {{ stable_hash(
                    "prompt_hash || ':' || cast(sample_idx as string) || ':"
                    ~ var('sample_seed') ~ "'"
                ) }},
                prompt_hash,
                sample_idx
        ) as sample_rank,
        max(ingested_at) over (partition by run_id, iteration)
            as ingested_through
    from int_rollouts_scored
),

final as (
    select
        ---------- ids
        run_id,
        iteration,
        prompt_hash,
        sample_idx,

        ---------- strings
        reward_case,

        ---------- numerics
        v_i,
        s_i,
        score,
        alpha_threshold,

        ---------- timestamps
        ingested_through

    from ranked
    where sample_rank <= {{ var('vi_si_points_per_iteration') }}
)

select * from final
