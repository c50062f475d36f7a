{{ config(incremental_by(['run_id', 'iteration'])) }}
{# Adaptive difficulty: k-means (Lloyd's algorithm) per run and iteration.
   1. Points: mean_at_5, success_rate (the share of rollouts that succeed
      under var success, as every count of solved prompts) and std_score
      (null as 0), each
      standardised within the run and iteration: (x - mean) / population
      std (a constant feature divided by 1).
   2. Start, no random draw: the points sorted by mean_at_5 (null as 0),
      then prompt_hash, cut into k = var kmeans_clusters equal slices (ntile:
      the first n mod k slices one point longer); cluster j is slice j.
   3. var kmeans_iterations Lloyd steps, unrolled: each centroid is the mean
      of its cluster's points, each point moves to its nearest centroid (ties
      to the lower cluster); an emptied cluster stays empty. Once no point
      moves, the later steps give the same clusters again.
   4. Clusters ranked by their mean mean_at_5 (null last, ties by cluster):
      rank r of m gets name round(r * 3 / (m - 1)) of hard, medium-hard,
      medium-easy, easy (one cluster: hard).
   Incremental by (run, iteration): only the iterations that changed. #}
{%- set k = var('kmeans_clusters') | int -%}
{%- set steps = var('kmeans_iterations') | int -%}
{%- if k < 2 or steps < 0 -%}
    {{ exceptions.raise_compiler_error(
        'kmeans_clusters must be at least 2 and kmeans_iterations at least 0'
    ) }}
{%- endif -%}
{%- set by_group = 'over (partition by run_id, iteration)' -%}
{%- set carried = 'run_id, iteration, prompt_hash, mean_at_5, ingested_through'
    ~ ', s0, s1, s2' -%}
with

int_prompt_iteration as (
    {{ changed_rows(ref('int_prompt_iteration'), upstream_time='ingested_through') }}
),

points as (
    select
        run_id,
        iteration,
        prompt_hash,
        ingested_through,
        cast(mean_at_5 as double) as mean_at_5,
        coalesce(cast(mean_at_5 as double), 0.0) as x0,
        coalesce(cast(success_rate as double), 0.0) as x1,
        coalesce(cast(std_score as double), 0.0) as x2
    from int_prompt_iteration
),

step_0 as (
    select
        run_id,
        iteration,
        prompt_hash,
        mean_at_5,
        ingested_through,
        {% for f in range(3) -%}
            (x{{ f }} - avg(x{{ f }}) {{ by_group }})
            / coalesce(nullif(stddev_pop(x{{ f }}) {{ by_group }}, 0), 1.0)
            as s{{ f }},
        {% endfor -%}
        ntile({{ k }}) over (
            partition by run_id, iteration order by x0, prompt_hash
        ) - 1 as label
    from points
),

{# One Lloyd step reads the step before once (a plan that stays linear on
   Spark): the centroids are window means, one per cluster and feature. #}
{% for step in range(1, steps + 1) %}
measured_{{ step }} as (
    select
        {{ carried }},
        {% for j in range(k) -%}
            {#- distances rounded to 9 decimals: a tie (frequent on discrete
                scores) goes to the lower cluster whatever the float noise
                of the sums on either engine -#}
            round(
                {%- for f in range(3) %}
                    {{ '+ ' if not loop.first }}power(s{{ f }} - avg(
                        case when label = {{ j }} then s{{ f }} end
                    ) {{ by_group }}, 2)
                {%- endfor %},
                9
            ) as d{{ j }}{{ ',' if not loop.last }}
        {% endfor %}
    from step_{{ step - 1 }}
),

step_{{ step }} as (
    select
        {{ carried }},
        case
            {% for j in range(k) -%}
                when d{{ j }} = least(
                    {%- for i in range(k) %}d{{ i }}{{ ', ' if not loop.last }}{% endfor -%}
                ) then {{ j }}
            {% endfor -%}
        end as label
    from measured_{{ step }}
),
{% endfor %}

clusters_ranked as (
    select
        *,
        dense_rank() over (
            partition by run_id, iteration
            {# rounded: equal cluster means rank by cluster on every build #}
            order by round(cluster_mean_at_5, 12) asc nulls last, label asc
        ) - 1 as cluster_rank
    from (
        select
            *,
            avg(mean_at_5) over (
                partition by run_id, iteration, label
            ) as cluster_mean_at_5
        from step_{{ steps }}
    ) as clustered
),

named as (
    select
        *,
        case
            when max(cluster_rank) {{ by_group }} = 0 then 0
            else round(cluster_rank * 3.0 / max(cluster_rank) {{ by_group }})
        end as name_index
    from clusters_ranked
),

final as (
    select
        ---------- ids
        run_id,
        iteration,
        prompt_hash,

        ---------- strings
        case name_index
            when 0 then 'hard'
            when 1 then 'medium-hard'
            when 2 then 'medium-easy'
            else 'easy'
        end as bucket,

        ---------- numerics
        cluster_mean_at_5,

        ---------- timestamps
        ingested_through
    from named
)

select * from final
