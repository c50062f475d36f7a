{{ config(materialized='view') }}
{# Every point of every tracker run, with its canonical name: a view of
   int_metric_history, which builds the rows (by run) for the models that
   read them, and where their rules are tested. The view names that table
   without the database, so it reads the same file's table when the
   warehouse is copied or attached under another name. #}
with

int_metric_history as (
    select
        run_id,
        step,
        metric,
        canonical_metric,
        value,
        wall_time,
        source,
        ingested_at,
        run_parts
    from {{ ref('int_metric_history').include(database=false) }}
)

select * from int_metric_history
