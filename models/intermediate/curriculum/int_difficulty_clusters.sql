{{ config(incremental_by(['run_id', 'iteration'])) }}
{# Adaptive difficulty: k-means (Lloyd's algorithm) per run and iteration, as the
   yml and docs/tables.md (Adaptive buckets) tell: standardised features, a start by
   ntile over mean_at_5 then prompt_hash, at most var kmeans_iterations steps folded
   (repeat_fold) over the points in prompt_hash order, so that every sum adds in that
   order (the same bits on both engines); the nearest centroid has the least key
   round(squared distance * 1e9) * k + cluster (an integer: ties to the lower one).
   A step binds its sizes and centroids (a one-element list's lambda): Spark would
   paste a column's expression into every lambda reading it. #}
{%- set k, steps = var('kmeans_clusters') | int, var('kmeans_iterations') | int -%}
{%- if k < 2 or steps < 0 -%}
    {{ exceptions.raise_compiler_error('kmeans_clusters < 2 or kmeans_iterations < 0') }}
{%- endif -%}
{%- set by_group = 'over (partition by run_id, iteration)' -%}
{%- set sizes, centroids, keys, start = {}, {}, [], {} -%}
{%- for j in range(k) -%}
    {%- set members = list_size(list_where('state', 'p', 'p.label = ' ~ j)) -%}
    {%- do sizes.update({'n' ~ j: 'nullif(' ~ members ~ ', 0)'}) -%}
    {%- do keys.append(('cast(round((power(p.s0 - c.c%d, 2) + power(p.s1 - c.c%d, 2)'
        ~ ' + power(p.s2 - c.c%d, 2)) * 1e9) as bigint) * %d + %d')
        | format(3 * j, 3 * j + 1, 3 * j + 2, k, j)) -%}
{%- endfor -%}
{%- for i in range(3 * k) -%}
    {%- set part = 'case when p.label = %d then p.s%d else 0.0 end' | format(i // 3, i % 3) -%}
    {%- set mean = list_total(list_map('state', 'p', part)) ~ ' / n.n' ~ i // 3 -%}
    {%- do centroids.update({'c' ~ i: mean}) -%}
{%- endfor -%}
{%- set label = 'cast(least(' ~ keys | join(', ') ~ ') % ' ~ k ~ ' as int)' -%}
{%- set ns = namespace(step=list_map('state', 'p', struct_from(
    {'s0': 'p.s0', 's1': 'p.s1', 's2': 'p.s2', 'label': label, 'previous': 'p.label'}))) -%}
{%- for name, value in [('c', centroids), ('n', sizes)] -%}
    {%- set ns.step = list_element(list_map(list_of([struct_from(value)]), name, ns.step), 1) -%}
{%- endfor -%}
{%- set still = list_size(list_where('state', 'p', 'p.label != p.previous')) ~ ' = 0' -%}
{%- for feature in ['mean_at_5', 'success_rate', 'std_score'] -%}
    {%- set x = 'case when ' ~ is_finite(feature) ~ ' then ' ~ feature ~ ' else 0.0 end' -%}
    {%- do start.update({'s' ~ loop.index0: '(' ~ x ~ ' - avg(' ~ x ~ ') ' ~ by_group
        ~ ') / coalesce(nullif(stddev_pop(' ~ x ~ ') ' ~ by_group ~ ', 0), 1.0)'}) -%}
    {%- if loop.first %}{% set ns.order = x %}{% endif -%}
{%- endfor -%}
{#- (the fields in the order a step writes them: Spark compares structs by it) -#}
{%- do start.update({'label': 'cast(ntile(' ~ k ~ ') over (partition by run_id, iteration'
    ~ ' order by ' ~ ns.order ~ ', prompt_hash) - 1 as int)', 'previous': 'cast(-1 as int)'}) -%}
with

int_prompt_iteration as (
    {{ changed_rows(ref('int_prompt_iteration'), upstream_time='ingested_through') }}
),

standardised as (
    select
        run_id,
        iteration,
        prompt_hash,
        {%- set finite = 'case when ' ~ is_finite('mean_at_5') ~ ' then mean_at_5 end' %}
        {{ struct_from({'prompt_hash': 'prompt_hash', 'mean_at_5': finite,
            'ingested_through': 'ingested_through'}) }} as kept,
        {{ struct_from(start) }} as point
    from int_prompt_iteration
),

clustered as (
    select
        run_id,
        iteration,
        {{ ordered_list('kept', ['prompt_hash']) }} as kept,
        {%- set points = ordered_list('point', ['prompt_hash']) %}
        {{ repeat_fold(steps, points, 'state', 'case when ' ~ still ~ ' then state else '
            ~ ns.step ~ ' end') if steps else points }} as points
    from standardised
    group by 1, 2
),

labelled as (
    select
        run_id,
        iteration,
        {%- for field in ['prompt_hash', 'mean_at_5', 'ingested_through'] %}
            {{ list_element('kept', 'position') }}.{{ field }} as {{ field }},
        {%- endfor %}
        {{ list_element('points', 'position') }}.label as label
    from (select clustered.*, {{ list_positions('kept') }} as position from clustered) as exploded
),

cluster_means as (
    select
        *,
        {# exact: it orders the clusters, so their names, on every build #}
        {{ exact_float('avg(mean_at_5) over (partition by run_id, iteration, label)') }}
            as cluster_mean_at_5
    from labelled
),

clusters_ranked as (
    select
        *,
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
        {{ list_element(list_of(["'hard'", "'medium-hard'", "'medium-easy'", "'easy'"]),
            '1 + cast(coalesce(round(cluster_rank * 3.0 / nullif(max(cluster_rank) '
            ~ by_group ~ ', 0)), 0) as int)') }} as bucket,

        ---------- numerics
        cluster_mean_at_5,

        ---------- timestamps
        ingested_through
    from clusters_ranked
)

select * from final
