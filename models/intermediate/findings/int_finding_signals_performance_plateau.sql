{# The rule performance_plateau: the reward (or Elo) stopped improving. Of
   the points that start a flat stretch to the series' end
   (int_finding_flat_stretches), the one where a hinge fits the series best
   starts the episode; a flat stretch mostly at the run's top reward is
   reward_saturation instead. #}
{{ finding_rule_start({
    'flat_stretches': ref('int_finding_flat_stretches'),
}) }}
plateau_points as (
    {# (without the flat stretches' marks of how far runs were judged) #}
    select * from flat_stretches
    where metric is not null
),

signals as (
    {# One episode per series, from where the reward stopped improving to
        the series' end. Of the points that start a flat stretch, the start
        is the one where a line that rises up to it and stays level from it
        on (a hinge) fits the whole series best (least squared error). The
        first flat point is often too early: the stretch from it is flat
        only on average. -#}
    select
        run_id,
        case when is_saturated then 'reward_saturation' else 'performance_plateau' end as pattern,
        case
            when is_saturated then metric || '_at_max'
            when metric = 'reward_mean' then 'reward_plateau'
            else 'elo_plateau'
        end as signal,
        step as start_step,
        last_step as step,
        2 as severity_rank,
        cast(flat_points as double) as strength,
        case
            when is_saturated
                then
                    metric || ' sat at its maximum '
                    || cast({{ round_to('series_max', 3) }} as string)
                    || ' on ' || cast(cast(round(100 * rest_at_max) as bigint) as string)
                    || '% of the points from step ' || step || ' to ' || last_step
            else
                metric || ' stopped improving at step ' || step || ': to step ' || last_step
                || ' its trend was ' || cast({{ round_to('rest_slope', 6) ~ ' + 0.0' }} as string)
                || ' a step (mean ' || cast({{ round_to('rest_mean', 3) }} as string)
                || '), at most ' || cast({{ round_to('gain_upper', 4) ~ ' + 0.0' }} as string)
                || ' gained by the end within {{ var('trend_z') }} standard errors'
                || coalesce(
                    ' (its pace before: '
                    || cast({{ round_to('pace_before', 6) ~ ' + 0.0' }} as string)
                    || ' a step)',
                    ''
                )
        end
        || ' (' || flat_points || ' flat starting points)' as phrase,
        {{ key_value_list([
            ("metric || '_slope'", 'rest_slope'),
            ("metric || '_slope_se'", 'rest_slope_se'),
            ("metric || '_mean_after'", 'rest_mean'),
            ("metric || '_gain_upper'", 'gain_upper'),
            ("metric || '_spread'", 'spread'),
            ("metric || '_pace_before'", 'pace_before'),
            ("metric || '_share_at_max'", 'rest_at_max'),
            ("metric || '_flat_points'", 'cast(flat_points as double)'),
        ]) }} as measures
    from (
        select
            *,
            count(*) over (partition by run_id, metric, is_saturated) as flat_points,
            row_number() over (
                partition by run_id, metric, is_saturated
                order by hinge_error nulls last, step
            ) as hinge_rank
        from plateau_points
    ) as with_flat_points
    where hinge_rank = 1
)

{{ finding_rule_end() }}
