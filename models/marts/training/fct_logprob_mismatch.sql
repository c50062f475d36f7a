{{ config(incremental_by(['run_id', 'step'])) }}
{# The train-inference mismatch of each step: over the tokens the trainer
   trained on (loss mask set, in a sample whose loss weight is not 0), d =
   trainer logprob - rollout engine logprob of the token, so exp(d) is the
   importance ratio pi_trainer / pi_rollout. Summed per rollout with list
   functions (no row per token), then per step. Incremental by run and step
   (a rollout's iteration): only the steps that received token rows since the
   last build are recomputed, each whole. #}
{%- set limit = var('mismatch_ratio_limit') -%}
{%- set ratio_limit = 'cast(' ~ limit ~ ' as double)' -%}
with

stg_rollout_tokens as (
    select
        run_id,
        iteration,
        loss_mask,
        rollout_logprobs,
        trainer_logprobs,
        sample_loss_mask,
        ingested_at
    from ({{ changed_rows(ref('stg_rollout_tokens')) }})
),

{# The trained tokens' differences, in token order (a rollout with none,
   or dropped whole by its loss weight, keeps an empty list). #}
rollouts_compared as (
    select
        run_id,
        iteration as step,
        ingested_at,
        case when coalesce(sample_loss_mask, 1) != 0 then {{ list_where(
            list_map(
                list_indexes('loss_mask'),
                'token_position',
                'case when ' ~ list_element('loss_mask', 'token_position')
                ~ ' then ' ~ list_element('trainer_logprobs', 'token_position')
                ~ ' - ' ~ list_element('rollout_logprobs', 'token_position')
                ~ ' end'
            ),
            'difference',
            'difference is not null'
        ) }} else {{ empty_list('double') }} end as differences
    from stg_rollout_tokens
    where
        {{ list_size('loss_mask') }} > 0
        and rollout_logprobs is not null
        and trainer_logprobs is not null
),

rollouts_summed as (
    select
        run_id,
        step,
        ingested_at,
        {{ list_size('differences') }} as tokens,
        case
            when {{ list_size('differences') }} > 0
                then {{ list_total('differences') }}
        end as total_diff,
        case when {{ list_size('differences') }} > 0 then {{ list_total(
            list_map('differences', 'difference', 'abs(difference)')
        ) }} end as total_abs_diff,
        case when {{ list_size('differences') }} > 0 then {{ list_fold(
            list_map('differences', 'difference', 'abs(difference)'),
            'largest', 'next_abs', 'greatest(largest, next_abs)'
        ) }} end as max_abs_diff,
        case when {{ list_size('differences') }} > 0 then {{ list_total(
            list_map(
                'differences', 'difference', 'exp(difference) - 1 - difference'
            )
        ) }} end as total_k3,
        {{ list_size(list_where(
            'differences', 'difference',
            'abs(difference) > ln(' ~ ratio_limit ~ ')'
        )) }} as tokens_outside,
        case when {{ list_size('differences') }} > 0 then {{ list_total(
            list_map(
                'differences', 'difference',
                'least(exp(difference), ' ~ ratio_limit ~ ')'
            )
        ) }} end as total_tis_weight
    from rollouts_compared
),

aggregated as (
    select
        run_id,
        step,
        count(*) as rollouts,
        cast(sum(tokens) as bigint) as tokens,
        sum(total_diff) as total_diff,
        sum(total_abs_diff) as total_abs_diff,
        max(max_abs_diff) as max_abs_diff,
        sum(total_k3) as total_k3,
        cast(sum(tokens_outside) as bigint) as tokens_outside,
        sum(total_tis_weight) as total_tis_weight,
        max(ingested_at) as ingested_through
    from rollouts_summed
    group by 1, 2
),

{# Means over the step's tokens; null when it compared none. #}
averaged as (
    select
        ---------- ids
        run_id,
        step,

        ---------- numerics
        rollouts,
        tokens,
        case when tokens > 0 then total_diff / tokens end as mean_diff,
        case when tokens > 0 then total_abs_diff / tokens end as mean_abs_diff,
        max_abs_diff,
        case when tokens > 0 then total_k3 / tokens end as k3_kl,
        tokens_outside,
        case
            when tokens > 0 then cast(tokens_outside as double) / tokens
        end as share_ratio_outside,
        case when tokens > 0 then total_tis_weight / tokens end as mean_tis_weight,
        {{ ratio_limit }} as ratio_limit,

        ---------- timestamps
        ingested_through

    from aggregated
)

select * from averaged
