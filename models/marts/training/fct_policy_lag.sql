{{ config(incremental_by(['run_id', 'step'])) }}
{# How old the policy was that generated what the trainer received: per
   sample, lag = the step it was trained at (its rollout's iteration, N of
   prime-rl's step_N) minus the oldest policy version live while it was
   generated (policy_start); per step, over every sample with a policy span.
   A sample is stale when its lag exceeds the var policy_lag_stale.
   Incremental by run and step: only the steps that received rows since the
   last build are recomputed, each whole. #}
{%- set stale = 'cast(' ~ var('policy_lag_stale') ~ ' as bigint)' -%}
with

stg_rollout_tokens as (
    select
        run_id,
        iteration,
        policy_start,
        ingested_at
    from ({{ changed_rows(ref('stg_rollout_tokens')) }})
    where policy_start is not null
),

samples_lagged as (
    select
        run_id,
        iteration as step,
        iteration - policy_start as lag,
        ingested_at
    from stg_rollout_tokens
),

aggregated as (
    select
        run_id,
        step,
        count(*) as samples,
        cast(sum(lag) as bigint) as total_lag,
        max(lag) as max_lag,
        cast(sum(case when lag > {{ stale }} then 1 else 0 end) as bigint) as stale_samples,
        max(ingested_at) as ingested_through
    from samples_lagged
    group by 1, 2
),

averaged as (
    select
        ---------- ids
        run_id,
        step,

        ---------- numerics
        samples,
        cast(total_lag as double) / samples as mean_lag,
        max_lag,
        stale_samples,
        cast(stale_samples as double) / samples as share_stale,
        {{ stale }} as stale_lag,

        ---------- timestamps
        ingested_through

    from aggregated
)

select * from averaged
