{{ config(incremental_by(['run_id'])) }}
{# Every point of every tracker run, with its canonical name: the rows of
   fct_metric_history (a view of this table). A run that logs
   several keys of one canonical metric (TRL's `loss` and `train/loss` from
   two trackers) gives the name to one of them: the alias with the lowest
   priority, then the first key by name; the others keep canonical_metric null.
   An alias holding % is a LIKE pattern (verl's `val-core/%/acc/mean@1`:
   any data source).
   Built by run: a build recomputes only the runs that received a lake part
   since the last one (macro changed_runs); a new key can move a run's names. #}
with

metrics as (
    {{ changed_runs(ref('stg_metrics'), lake_run_parts('metrics')) }}
),

aliases as (
    select * from {{ ref('metric_aliases') }}
),

run_keys as (
    select distinct
        run_id,
        metric
    from metrics
),

ranked as (
    select
        run_keys.run_id,
        run_keys.metric,
        aliases.canonical_metric,
        row_number() over (
            partition by run_keys.run_id, aliases.canonical_metric
            order by aliases.priority, run_keys.metric
        ) as alias_rank
    from run_keys
    inner join aliases
        on
            run_keys.metric = aliases.framework_key
            {#- a key holding % is a LIKE pattern (verl's val-core/<data source>/...) #}
            or (
                instr(aliases.framework_key, '%') > 0
                and run_keys.metric like aliases.framework_key
            )
),

chosen as (
    select
        run_id,
        metric,
        canonical_metric
    from ranked
    where alias_rank = 1
),

final as (
    select
        metrics.run_id,
        metrics.step,
        metrics.metric,
        chosen.canonical_metric,
        metrics.value,
        metrics.wall_time,
        metrics.source,
        metrics.ingested_at,
        metrics.run_parts
    from metrics
    left join chosen using (run_id, metric)
)

select * from final
