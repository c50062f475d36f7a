{# One row per tracker run: its newest attributes, each the latest non-empty
   value any ingest gave (a run landed from two trackers under one `--run`
   merges). dim_runs adds how far the run's history reaches; the power-law
   fit reads the base model and the tags from here.
   The state is the newest one a source states, never the last source's
   guess: a state other than running is a statement (an exit record, a
   tracker's status, TRL's global_step at max_steps, the monitor's
   final_metrics.json), and so is running where the tracker reports it (a
   W&B export's state, an MLflow status). Elsewhere running only means that
   something is missing (no exit record yet, a file still being written,
   no final_metrics.json, global_step short of max_steps: a run stopped
   early looks the same), so it states nothing. #}
with

runs as (
    select * from {{ ref('stg_runs') }}
),

runs_judged as (
    select
        *,
        coalesce(
            state <> 'running' or source in ('wandb-export', 'mlflow'), false
        ) as is_state_stated
    from runs
),

attributes as (
    select
        run_id,
        {{ arg_max('source', 'ingested_at') }} as source,
        {{ sorted_distinct_list('source') }} as sources,
        {{ arg_max('project', 'ingested_at') }} filter (where project is not null) as project,
        {{ arg_max('entity', 'ingested_at') }} filter (where entity is not null) as entity,
        {{ arg_max('name', 'ingested_at') }} filter (where name is not null) as name,
        {{ arg_max('state', 'ingested_at') }} filter (
            where is_state_stated
        ) as state,
        {{ arg_max('source', 'ingested_at') }} filter (
            where is_state_stated
        ) as state_source,
        {{ arg_max('tags', 'ingested_at') }} filter (where {{ list_size('tags') }} > 0) as tags,
        min(created_at) as created_at,
        {{ arg_max('config', 'ingested_at') }} filter (
            where cast(config as string) <> '{}'
        ) as config,
        {{ arg_max('summary', 'ingested_at') }} filter (
            where cast(summary as string) <> '{}'
        ) as summary,
        {{ arg_max('artifacts', 'ingested_at') }} filter (
            where cast(artifacts as string) <> '[]'
        ) as artifacts,
        max(ingested_at) as updated_at
    from runs_judged
    group by 1
),

final as (
    select
        run_id,
        source,
        sources,
        project,
        entity,
        coalesce(name, run_id) as name,
        state,
        state_source,
        coalesce(tags, {{ empty_list('varchar') }}) as tags,
        created_at,
        coalesce(config, {{ as_json("'{}'") }}) as config,
        coalesce(summary, {{ as_json("'{}'") }}) as summary,
        coalesce(artifacts, {{ as_json("'[]'") }}) as artifacts,
        updated_at
    from attributes
)

select * from final
