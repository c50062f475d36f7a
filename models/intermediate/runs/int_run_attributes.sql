{# One row per tracker run: its newest attributes, each the latest non-empty
   value any ingest gave (a run landed from two trackers under one `--run`
   merges). dim_runs adds how far the run's history reaches; the power-law
   fit reads the base model and the tags from here. #}
with

runs as (
    select * from {{ ref('stg_runs') }}
),

attributes as (
    select
        run_id,
        {{ arg_max('source', 'ingested_at') }} as source,
        {{ sorted_distinct_list('source') }} as sources,
        {{ arg_max('project', 'ingested_at') }} filter (where project is not null) as project,
        {{ arg_max('entity', 'ingested_at') }} filter (where entity is not null) as entity,
        {{ arg_max('name', 'ingested_at') }} filter (where name is not null) as name,
        {{ arg_max('state', 'ingested_at') }} filter (where state is not null) as state,
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
    from runs
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
        coalesce(tags, {{ empty_list('varchar') }}) as tags,
        created_at,
        coalesce(config, {{ as_json("'{}'") }}) as config,
        coalesce(summary, {{ as_json("'{}'") }}) as summary,
        coalesce(artifacts, {{ as_json("'[]'") }}) as artifacts,
        updated_at
    from attributes
)

select * from final
