{{ config(incremental_by(['run_id', 'iteration'])) }}
{# Adaptive difficulty: seeded k-means on standardised prompt features, in
   SQL both engines run, step for step what numpy's k-means computes (so
   the buckets are the ones the project's numpy model gave):
   1. per run and iteration, the prompts' mean_at_5, success_rate (the
      share of rollouts that succeed under var success, as every count
      of solved prompts) and std_score (null and NaN as 0), in
      prompt_hash order, standardised
      (population std; a constant feature divided by 1), every sum added in
      that order;
   2. k = least(var kmeans_clusters, distinct standardised points);
      k-means++ starts from numpy's generator seeded with var kmeans_seed
      (macro kmeans_draws): the first centre at integers(n), each next one
      drawn with weights the squared distance to the nearest centre;
   3. Lloyd iterations (macro kmeans_labels; each point to its nearest centre, first on ties;
      each centre to its points' mean, kept when it has none) until the
      assignment stops changing and the centres moved within numpy's
      allclose, at most 100;
   4. clusters named by their mean mean_at_5 (exact mean, NaN last, ties by
      cluster), lowest first: hard, medium-hard, medium-easy, easy; fewer
      clusters spread over those names (two are hard and easy).
   Incremental by (run, iteration): only the iterations that changed. #}
{%- set clusters_asked = var('kmeans_clusters') | int -%}
{%- set kmeans_seed = var('kmeans_seed') | int -%}
{%- set draws = kmeans_draws(kmeans_seed, clusters_asked) -%}
{%- set features = ['mean_at_5', 'success_rate', 'std_score'] -%}
with

int_prompt_iteration as (
    {{ changed_rows(ref('int_prompt_iteration'), upstream_time='ingested_through') }}
),

prompts as (
    select
        run_id,
        iteration,
        prompt_hash,
        ingested_through,
        cast(mean_at_5 as double) as mean_at_5,
        {% for feature in features -%}
            case
                when isnan(coalesce(cast({{ feature }} as double), 0.0)) then 0.0
                else coalesce(cast({{ feature }} as double), 0.0)
            end as x{{ loop.index0 }},
        {% endfor -%}
        row_number() over (
            partition by run_id, iteration order by prompt_hash
        ) as position
    from int_prompt_iteration
),

grouped as (
    select
        run_id,
        iteration,
        count(*) as n_points,
        {{ ordered_non_null_list(struct_from({
            'position': 'cast(position as integer)',
            'prompt_hash': 'prompt_hash',
            'x0': 'x0',
            'x1': 'x1',
            'x2': 'x2',
        }), 'prompt_hash') }} as points
    from prompts
    group by 1, 2
),

{# Standardised in one expression: the means and the population stds
   (squares of the deviations summed in order) are bound once (macro bind)
   and read inside the points' lambda. As columns of a CTE, Spark's optimizer
   would paste their list sums into the lambda, once per point: n^2 per
   mean, n^3 per std. #}
standardised as (
    select
        run_id,
        iteration,
        n_points,
        {%- set ns = namespace(body=list_map('points', 'p', struct_from({
            'position': 'p.position',
            'prompt_hash': 'p.prompt_hash',
            's0': '(p.x0 - mean0) / case when spread0 = 0 then 1.0 else spread0 end',
            's1': '(p.x1 - mean1) / case when spread1 = 0 then 1.0 else spread1 end',
            's2': '(p.x2 - mean2) / case when spread2 = 0 then 1.0 else spread2 end',
            'weight': 'cast(0.0 as double)',
            'label': '0',
            'previous': '0',
        }))) %}
        {%- for i in [2, 1, 0] %}
            {%- set ns.body = bind(
                'spread' ~ i,
                'sqrt(' ~ list_total(list_map(
                    'points', 'p', '(p.x' ~ i ~ ' - mean' ~ i ~ ') * (p.x' ~ i ~ ' - mean' ~ i ~ ')'
                )) ~ ' / cast(n_points as double))',
                ns.body
            ) %}
        {%- endfor %}
        {%- for i in [2, 1, 0] %}
            {%- set ns.body = bind(
                'mean' ~ i,
                list_total(list_map('points', 'p', 'p.x' ~ i)) ~ ' / cast(n_points as double)',
                ns.body
            ) %}
        {%- endfor %}
        {{ ns.body }} as points
    from grouped
),

counted as (
    select
        *,
        least(
            {{ clusters_asked }},
            {{ list_size(list_distinct(list_map(
                'points', 'p', struct_from({'s0': 'p.s0', 's1': 'p.s1', 's2': 'p.s2'})
            ))) }}
        ) as n_clusters,
        {#- numpy's integers(n): Lemire's multiply-shift of a 32-bit draw,
            the next draw when the first falls in the rejected sliver -#}
        1 + cast(
            floor(
                case
                    when
                        ({{ draws.low }} * n_points) % 4294967296
                        < (4294967296 - n_points) % n_points
                        then {{ draws.high }} * n_points
                    else {{ draws.low }} * n_points
                end / cast(4294967296 as double)
            ) as integer
        ) as first_position
    from standardised
),

clustered as (
    select
        run_id,
        iteration,
        {#- the columns bound, not pasted by Spark's optimizer into the
            k-means' lambdas (once per point and iteration) -#}
        {{ bind(
            'kmeans_input',
            struct_from({
                'points': 'points',
                'clusters': 'n_clusters',
                'first_position': 'first_position',
            }),
            kmeans_labels(
                'kmeans_input.points', 'kmeans_input.clusters', 'kmeans_input.first_position',
                clusters_asked, kmeans_seed
            )
        ) }} as points
    from counted
),

labelled as (
    {#- one row per point (the list goes once per group, not once per point) -#}
    select
        exploded.run_id,
        exploded.iteration,
        exploded.point.position,
        exploded.point.label
    from (
        select
            run_id,
            iteration,
            {{ explode_list('points') }} as point
        from clustered
    ) as exploded
),

prompt_labels as (
    select
        labelled.run_id,
        labelled.iteration,
        prompts.prompt_hash,
        prompts.mean_at_5,
        prompts.ingested_through,
        labelled.label
    from labelled
    inner join prompts
        on
            labelled.run_id = prompts.run_id
            and labelled.iteration = prompts.iteration
            and labelled.position = prompts.position
),

cluster_means as (
    select
        run_id,
        iteration,
        label,
        {{ fsum_mean('mean_at_5') }} as cluster_mean_at_5
    from prompt_labels
    group by 1, 2, 3
),

ranked as (
    select
        *,
        row_number() over (
            partition by run_id, iteration
            order by cluster_mean_at_5, label
        ) - 1 as cluster_rank,
        count(*) over (partition by run_id, iteration) as n_present
    from cluster_means
),

{# numpy's round(linspace(0, 3, m)) for m clusters: the cluster of rank r
   gets the name at round-half-even(r * (3 / (m - 1))), the last one easy. #}
slotted as (
    select
        *,
        case
            when n_present = 1 then 0.0
            else cluster_rank * (cast(3 as double) / (n_present - 1))
        end as spread_position
    from ranked
),

named as (
    select
        *,
        case
            when cluster_rank = n_present - 1 and n_present > 1 then 3
            when spread_position - floor(spread_position) > 0.5
                then floor(spread_position) + 1
            when spread_position - floor(spread_position) = 0.5
                then floor(spread_position) + floor(spread_position) % 2
            else floor(spread_position)
        end as slot
    from slotted
),

final as (
    select
        ---------- ids
        prompt_labels.run_id,
        prompt_labels.iteration,
        prompt_labels.prompt_hash,

        ---------- strings
        case named.slot
            when 0 then 'hard'
            when 1 then 'medium-hard'
            when 2 then 'medium-easy'
            else 'easy'
        end as bucket,

        ---------- numerics
        named.cluster_mean_at_5,

        ---------- timestamps
        prompt_labels.ingested_through
    from prompt_labels
    inner join named
        on
            prompt_labels.run_id = named.run_id
            and prompt_labels.iteration = named.iteration
            and prompt_labels.label = named.label
)

select * from final
