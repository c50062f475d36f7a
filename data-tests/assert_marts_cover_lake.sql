{# Every rollout published up to a run's watermark is counted in
   fct_prompt_iteration, group by group: an ingest running during a build
   must never leave rows the marts miss for good. Rows newer than the
   watermark (an ingest still publishing) are not yet due. A run the marts do
   not know yet is due up to the newest watermark less the look-back window.
   It reads int_prompt_iteration, the table behind the fct_prompt_iteration
   view: a test runs when a model it reads was built. #}
with

int_prompt_iteration as (
    select
        run_id,
        iteration,
        prompt_hash,
        n_samples,
        ingested_through
    from {{ ref('int_prompt_iteration') }}
),

stg_rollouts as (
    select
        run_id,
        iteration,
        prompt_hash,
        ingested_at
    from {{ ref('stg_rollouts') }}
),

watermarks as (
    select
        run_id,
        max(ingested_through) as ingested_through
    from int_prompt_iteration
    group by 1
),

newest as (
    select
        max(ingested_through)
        - {{ interval_seconds(var('incremental_lookback_seconds')) }} as due_through
    from int_prompt_iteration
),

due_rollouts as (
    select
        stg_rollouts.run_id,
        stg_rollouts.iteration,
        stg_rollouts.prompt_hash,
        count(*) as n_landed
    from stg_rollouts
    left join watermarks
        on stg_rollouts.run_id = watermarks.run_id
    cross join newest
    where
        stg_rollouts.ingested_at
        <= coalesce(watermarks.ingested_through, newest.due_through)
    group by 1, 2, 3
),

compared as (
    select
        coalesce(due_rollouts.run_id, int_prompt_iteration.run_id) as run_id,
        coalesce(due_rollouts.iteration, int_prompt_iteration.iteration)
            as iteration,
        coalesce(due_rollouts.prompt_hash, int_prompt_iteration.prompt_hash)
            as prompt_hash,
        coalesce(due_rollouts.n_landed, 0) as n_landed,
        coalesce(int_prompt_iteration.n_samples, 0) as n_in_marts
    from due_rollouts
    full outer join int_prompt_iteration
        on
            due_rollouts.run_id = int_prompt_iteration.run_id
            and due_rollouts.iteration = int_prompt_iteration.iteration
            and due_rollouts.prompt_hash = int_prompt_iteration.prompt_hash
)

select * from compared
where n_landed != n_in_marts
