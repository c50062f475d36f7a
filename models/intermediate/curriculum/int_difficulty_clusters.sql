{{ config(incremental_by(['run_id', 'iteration'])) }}
{# Adaptive difficulty: k-means (Lloyd's algorithm) per run and iteration.
   1. Points: mean_at_5, success_rate (the share of rollouts that succeed
      under var success) and std_score, a null, NaN or infinite value taken
      as 0 (is_finite: a NaN would poison every distance), standardised
      within the run and iteration: (x - mean) / population std (a
      constant feature divided by 1).
   2. Start, no random draw: the points sorted by mean_at_5 (as in 1), then
      prompt_hash, cut into k = var kmeans_clusters slices (ntile: the first
      n mod k one point longer); cluster j is slice j.
   3. var kmeans_iterations Lloyd steps, unrolled: each centroid is the mean
      of its cluster's points, each point moves to its nearest centroid
      (squared distance rounded to 9 decimals, so that float noise cannot
      break a tie; ties to the lower cluster); an emptied cluster stays
      empty. Converged (no point moves), the later steps change nothing;
      otherwise the cap stops it.
   4. Clusters ranked by their mean finite mean_at_5 (exact_float; null
      last, ties by cluster): rank r of m gets name round(r * 3 / (m - 1)) of hard,
      medium-hard, medium-easy, easy (one cluster: hard).
   Each step reads the step before once (Spark inlines every CTE; one read
   twice would double the plan per step); window_chain_guard does the same
   for DuckDB's planner. Incremental by (run, iteration). #}
{%- set k = var('kmeans_clusters') | int -%}
{%- set steps = var('kmeans_iterations') | int -%}
{%- if k < 2 or steps < 0 -%}
    {{ exceptions.raise_compiler_error('kmeans_clusters < 2 or kmeans_iterations < 0') }}
{%- endif -%}
{%- set by_group = 'over (partition by run_id, iteration)' -%}
{%- set carried = 'run_id, iteration, prompt_hash, mean_at_5, ingested_through, s0, s1, s2' -%}
{%- set distances = [] -%}
{%- for j in range(k) %}{% do distances.append('d' ~ j) %}{% endfor -%}
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
        {%- for feature in ['mean_at_5', 'success_rate', 'std_score'] %}
            case when {{ is_finite(feature) }} then {{ feature }} else 0.0 end
                as x{{ loop.index0 }},
        {%- endfor %}
        case when {{ is_finite('mean_at_5') }} then mean_at_5 end as mean_at_5
    from int_prompt_iteration
),

step_0 as (
    select
        {{ window_chain_guard() }}
        run_id,
        iteration,
        prompt_hash,
        mean_at_5,
        ingested_through,
        {%- for f in range(3) %}
            (x{{ f }} - avg(x{{ f }}) {{ by_group }})
            / coalesce(nullif(stddev_pop(x{{ f }}) {{ by_group }}, 0), 1.0) as s{{ f }},
        {%- endfor %}
        ntile({{ k }}) over (partition by run_id, iteration order by x0, prompt_hash) - 1 as label
    from points
),
{%- for step in range(1, steps + 1) %}

    measured_{{ step }} as (
        select
            {{ window_chain_guard() }}
            {%- for j in range(k) %}
                round(
                    {%- for f in range(3) %}
                        {{ '+ ' if not loop.first }}power(
                            s{{ f }} - avg(case when label = {{ j }} then s{{ f }} end) over (
                                partition by run_id, iteration
                            ),
                            2
                        )
                    {%- endfor %},
                    9
                ) as d{{ j }},
            {%- endfor %}
            {{ carried }}
        from step_{{ step - 1 }}
    ),

    step_{{ step }} as (
        select
            {{ carried }},
            case
                {%- for j in range(k) %}
                    when d{{ j }} = least({{ distances | join(', ') }}) then {{ j }}
                {%- endfor %}
            end as label
        from measured_{{ step }}
    ),
{%- endfor %}

cluster_means as (
    select
        {{ window_chain_guard() }}
        {{ carried }},
        label,
        {# exact: it orders the clusters, so their names, on every build #}
        {{ exact_float('avg(mean_at_5) over (partition by run_id, iteration, label)') }}
            as cluster_mean_at_5
    from step_{{ steps }}
),

clusters_ranked as (
    select
        {{ window_chain_guard() }}
        {{ carried }},
        cluster_mean_at_5,
        dense_rank() over (
            partition by run_id, iteration order by cluster_mean_at_5 asc nulls last, label asc
        ) - 1 as cluster_rank
    from cluster_means
),

final as (
    select
        ---------- ids
        run_id,
        iteration,
        prompt_hash,

        ---------- strings
        case coalesce(round(cluster_rank * 3.0 / nullif(max(cluster_rank) {{ by_group }}, 0)), 0)
            when 0 then 'hard'
            when 1 then 'medium-hard'
            when 2 then 'medium-easy'
            else 'easy'
        end as bucket,

        ---------- numerics
        cluster_mean_at_5,

        ---------- timestamps
        ingested_through
    from clusters_ranked
)

select * from final
