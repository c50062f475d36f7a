{{
    config(
        materialized='incremental',
        unique_key=['run_id', 'iteration'],
    )
}}
with

fct_prompt_iteration as (
    select
        run_id,
        iteration,
        n_samples,
        mean_score,
        std_score,
        prompt_strict_acc,
        strict_success_rate,
        pass_rate,
        mean_response_chars,
        is_zero_variance,
        zero_variance_outcome,
        ingested_through
    from ({{
        changed_rows(ref('fct_prompt_iteration'), upstream_time='ingested_through')
    }})
),

aggregated as (
    select
        ---------- ids
        run_id,
        iteration,

        ---------- numerics
        cast(sum(n_samples) as bigint) as n_rollouts,
        count(*) as n_prompts,
        {{ exact_float('sum(mean_score * n_samples) / sum(n_samples)') }}
            as mean_score,
        {{ exact_float('avg(std_score)') }} as mean_std_score,
        {{ exact_float('avg(prompt_strict_acc)') }} as prompt_strict_acc,
        {{ exact_float(
            'sum(strict_success_rate * n_samples) / sum(n_samples)'
        ) }} as strict_success_rate,
        {{ exact_float('sum(pass_rate * n_samples) / sum(n_samples)') }}
            as pass_rate,
        {{ exact_float(
            'sum(mean_response_chars * n_samples) / sum(n_samples)'
        ) }} as mean_response_chars,
        count(*) filter (where is_zero_variance) as n_zero_variance,
        count(*) filter (where zero_variance_outcome = 'all_solved')
            as n_zero_variance_solved,
        count(*) filter (where zero_variance_outcome = 'all_failed')
            as n_zero_variance_failed,
        {{ exact_float(
            'avg(case when is_zero_variance then 1.0 else 0.0 end)'
        ) }} as zero_variance_share,

        ---------- timestamps
        max(ingested_through) as ingested_through

    from fct_prompt_iteration
    group by 1, 2
)

select * from aggregated
