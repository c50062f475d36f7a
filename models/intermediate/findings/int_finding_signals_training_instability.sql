{# The rule training_instability: loss or gradient-norm spikes, swings of
   the reward and sudden drops of the extraction rate (excursions against
   the series' own noise, which int_finding_judgements judges together), and
   non-finite values of the metrics that diverge. The first points of a
   series, before it has a trailing window, are scored on their
   step-to-step change (int_metric_scores' burn-in; is_burn_in), so a run
   that blows up at its start is named there. #}
{%- set spike_z = var('spike_z') -%}
{{ finding_rule_start({
    'stats': ref('int_metric_scores'),
    'history': ref('int_metric_history'),
}) }}
instability_spikes as (
    {# Loss or gradient-norm spikes, swings of the reward, sudden drops of
       the extraction rate: excursions, judged together in
       int_finding_judgements. #}
    select
        run_id,
        'training_instability' as pattern,
        case metric
            when 'loss' then 'loss_spike'
            when 'grad_norm' then 'grad_norm_spike'
            when 'reward_mean_change' then 'reward_swing'
            else 'extraction_drop'
        end as signal,
        step as start_step,
        step,
        1 as severity_rank,
        abs(z) as strength,
        case
            when metric = 'reward_mean_change'
                then
                    'reward_mean moved by ' || cast({{ round_to('value', 3) }} as string)
                    || ' at step ' || step
                    || ', z ' || cast({{ round_to('z', 1) }} as string)
                    || ' against its step-to-step changes'
                    || case when is_burn_in then ' (burn-in)' else '' end
            when metric = 'extraction_rate'
                then
                    'extraction_rate fell to ' || cast({{ round_to('value', 3) }} as string)
                    || ' at step ' || step
                    || ', z ' || cast({{ round_to('z', 1) }} as string)
                    || ' below its trailing median '
                    || cast({{ round_to('trailing_median', 3) }} as string)
            when is_burn_in
                then
                    metric || ' reached ' || cast({{ round_to('value', 3) }} as string)
                    || ' at step ' || step
                    || ' from ' || cast({{ round_to('burn_in_reference', 3) }} as string)
                    || ' the point before, z ' || cast({{ round_to('z', 1) }} as string)
                    || ' against its step-to-step changes (burn-in)'
            else
                metric || ' reached ' || cast({{ round_to('value', 3) }} as string)
                || ' at step ' || step
                || ', z ' || cast({{ round_to('z', 1) }} as string) || ' above its trailing median '
                || cast({{ round_to('trailing_median', 3) }} as string)
        end as phrase,
        {{ key_value_list([
            ('metric', 'value'),
            ("metric || '_z'", 'z'),
            (
                'metric || reference_name',
                'case when is_burn_in then burn_in_reference else trailing_median end'
            ),
        ]) }} as measures
    from (
        select
            *,
            lag(z) over (partition by run_id, metric order by n) as previous_z,
            {#- a burn-in point is compared with the point before it (the
                reward's swings: with its early median change) -#}
            case
                when is_burn_in then '_burn_in_reference' else '_trailing_median'
            end as reference_name
        from stats
    ) as with_previous_z
    where
        (metric in ('loss', 'grad_norm') and z > {{ spike_z }})
        or (
            metric = 'reward_mean_change' and abs(z) > {{ spike_z }}
            {# One odd batch moves the reward away and back: the way back is
               the same excursion. #}
            and not coalesce(abs(previous_z) > {{ spike_z }} and sign(previous_z) != sign(z), false)
        )
        or (metric = 'extraction_rate' and z < -{{ spike_z }})
),

instability_non_finite as (
    {# A NaN or infinite loss, gradient norm, reward, KL or entropy: the run
       diverged (or its logging broke) there. #}
    select
        run_id,
        'training_instability' as pattern,
        canonical_metric || '_non_finite' as signal,
        step as start_step,
        step,
        3 as severity_rank,
        cast(1e9 as double) as strength,
        {# written as Python prints it (nan, inf, -inf), on either engine #}
        canonical_metric || ' was '
        || case when isnan(value) then 'nan' when value > 0 then 'inf' else '-inf' end
        || ' at step ' || step as phrase,
        {{ key_value_list([
            ("canonical_metric || '_non_finite_step'", 'cast(step as double)'),
        ]) }}
            as measures
    from history
    where
        canonical_metric in ('loss', 'grad_norm', 'reward_mean', 'kl', 'entropy')
        and not {{ is_finite('value') }}
),

signals as (
    select * from instability_spikes
    union all
    select * from instability_non_finite
)

{{ finding_rule_end() }}
