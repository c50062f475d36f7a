{{ config(materialized='view') }}
{# The prefix cache of each run in one row: a view of int_cache_stats,
   which builds the rows for the models that read them (the findings), and
   where their rules are tested. The view names that table without the
   database, so it reads the same file's table when the warehouse is copied
   or attached under another name. #}
with

int_cache_stats as (
    select
        run_id,
        cache_enabled,
        first_step,
        last_step,
        data_points,
        avg_hit_rate,
        final_hit_rate,
        peak_hit_rate,
        hit_rate_after_warmup,
        overall_hit_rate,
        total_cache_hits,
        total_cache_queries,
        total_prompt_tokens,
        estimated_tokens_saved,
        hit_rate_slope,
        status
    from {{ ref('int_cache_stats').include(database=false) }}
)

select * from int_cache_stats
