{# The rule entropy_collapse_plateau: the policy's entropy fell below a
   fraction of its early level, and the reward stopped improving at or after
   that point (a flat starting point of int_finding_flat_stretches). #}
{%- set window = var('plateau_window') -%}
{{ finding_rule_start({
    'stats': ref('int_metric_scores'),
    'flat_stretches': ref('int_finding_flat_stretches'),
}) }}
plateau_points as (
    {# (without the flat stretches' marks of how far runs were judged) #}
    select * from flat_stretches
    where metric is not null
),

entropy_early as (
    select
        run_id,
        avg(value) as early_entropy
    from stats
    where metric = 'entropy' and n <= {{ window }}
    group by 1
    having count(*) = {{ window }}
),

entropy_collapse as (
    {# The first point after the early window below the fraction of it. #}
    select
        run_id,
        collapse_step,
        collapse_entropy,
        early_entropy
    from (
        select
            stats.run_id,
            stats.step as collapse_step,
            stats.value as collapse_entropy,
            entropy_early.early_entropy,
            row_number() over (partition by stats.run_id order by stats.step) as collapse_rank
        from stats
        inner join entropy_early using (run_id)
        where
            stats.metric = 'entropy'
            and stats.n > {{ window }}
            and stats.value < {{ var('entropy_collapse_fraction') }} * entropy_early.early_entropy
    ) as collapsed_points
    where collapse_rank = 1
),

signals as (
    {# The collapse, when a reward plateau window ends at or after it. #}
    select
        entropy_collapse.run_id,
        'entropy_collapse_plateau' as pattern,
        'entropy_collapse' as signal,
        entropy_collapse.collapse_step as start_step,
        max(plateau.step) as step,
        case when count(*) >= {{ var('plateau_min_windows') }} then 2 else 1 end as severity_rank,
        -any_value(entropy_collapse.collapse_entropy) as strength,
        'entropy fell to '
        || cast({{ round_to('any_value(entropy_collapse.collapse_entropy)', 3) }} as string)
        || ' at step ' || entropy_collapse.collapse_step || ' (under '
        || '{{ var("entropy_collapse_fraction") }}' || ' of its early '
        || cast({{ round_to('any_value(entropy_collapse.early_entropy)', 3) }} as string)
        || '), then reward_mean stopped improving (flat from step '
        || min(plateau.step) || ')' as phrase,
        {{ key_value_list([
            ("'early_entropy'", 'any_value(entropy_collapse.early_entropy)'),
            ("'collapse_entropy'", 'any_value(entropy_collapse.collapse_entropy)'),
            (
                "'entropy_fraction'",
                'any_value(entropy_collapse.collapse_entropy)'
                ~ ' / any_value(entropy_collapse.early_entropy)'
            ),
            ("'plateau_first_step'", 'cast(min(plateau.step) as double)'),
            ("'reward_mean_slope'", arg_min('plateau.rest_slope', 'plateau.step')),
        ]) }} as measures
    from entropy_collapse
    inner join plateau_points as plateau
        on
            entropy_collapse.run_id = plateau.run_id
            and plateau.metric = 'reward_mean'
            and not plateau.is_saturated
            and entropy_collapse.collapse_step <= plateau.step
    group by 1, 4
)

{{ finding_rule_end() }}
