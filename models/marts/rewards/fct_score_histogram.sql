{{ config(incremental_by(['run_id'])) }}
{% set bins = var('score_histogram_bins') %}
{# Bins span the run's score range, so a run is recomputed whole when any
   of its iterations received rows: read from stg_rollouts, the lake's own
   view (only the score column of the run's parts). #}
with

rollouts as (
    select
        run_id,
        iteration,
        score,
        ingested_at
    from ({{ changed_rows(ref('stg_rollouts'), grain=['run_id']) }})
),

run_ranges as (
    {# One range per run, so every iteration's histogram shares its bins. #}
    select
        run_id,
        min(score) as range_low,
        max(score) as range_high,
        max(ingested_at) as ingested_through
    from rollouts
    group by 1
),

binned as (
    select
        rollouts.run_id,
        rollouts.iteration,
        run_ranges.range_low,
        run_ranges.range_high,
        run_ranges.ingested_through,
        case
            when run_ranges.range_high = run_ranges.range_low then 0
            else least(
                cast(floor(
                    (rollouts.score - run_ranges.range_low)
                    / (run_ranges.range_high - run_ranges.range_low)
                    * {{ bins }}
                ) as integer),
                {{ bins }} - 1
            )
        end as bin_index
    from rollouts
    inner join run_ranges
        on rollouts.run_id = run_ranges.run_id
),

bin_numbers as (
    select bin_numbers.bin_index
    from (
        values
        {%- for bin in range(bins) %}
            (cast({{ bin }} as bigint)){{ "," if not loop.last }}
        {%- endfor %}
    ) as bin_numbers (bin_index)
),

all_bins as (
    {# Every bin of every run and iteration, so empty bins are zero rows. #}
    select distinct
        binned.run_id,
        binned.iteration,
        binned.range_low,
        binned.range_high,
        binned.ingested_through,
        bin_numbers.bin_index
    from binned
    cross join bin_numbers
),

counted as (
    select
        run_id,
        iteration,
        bin_index,
        count(*) as n
    from binned
    group by 1, 2, 3
),

final as (
    select
        ---------- ids
        all_bins.run_id,
        all_bins.iteration,
        all_bins.bin_index,

        ---------- numerics
        all_bins.range_low
        + (all_bins.range_high - all_bins.range_low)
        * all_bins.bin_index / {{ bins }} as bin_lower,
        all_bins.range_low
        + (all_bins.range_high - all_bins.range_low)
        * (all_bins.bin_index + 1) / {{ bins }} as bin_upper,
        coalesce(counted.n, 0) as n,
        cast(coalesce(counted.n, 0) as double)
        / sum(coalesce(counted.n, 0)) over (
            partition by all_bins.run_id, all_bins.iteration
        ) as share,

        ---------- timestamps
        all_bins.ingested_through

    from all_bins
    left join counted
        on
            all_bins.run_id = counted.run_id
            and all_bins.iteration = counted.iteration
            and all_bins.bin_index = counted.bin_index
)

select * from final
