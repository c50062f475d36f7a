{# The thresholds the run report (`obs analyze RUN --out FILE.html`) draws as
   lines, as the build that made this warehouse set them: dbt_project.yml's
   vars, or the values of `obs build --vars '{...}'`. The report reads them
   here, so a line sits where the marts' own rules put the cut. #}
select
    cast({{ var('extraction_rate_min') }} as double) as extraction_rate_min,
    cast({{ var('cache_hit_good') }} as double) as cache_hit_good,
    cast({{ var('cache_hit_low') }} as double) as cache_hit_low,
    cast({{ var('cache_warmup_steps') }} as integer) as cache_warmup_steps
