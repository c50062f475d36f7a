{# The rule length_truncation: responses cut at the maximum length, the
   clipped share above its limit and rising steadily while the response
   length rises. #}
{%- set window = var('plateau_window') -%}
{{ finding_rule_start({
    'stats': ref('int_metric_scores'),
}) }}
signals as (
    {# Clipped share above clip_ratio_max while it and the response length
       rise together over the window (the clipped share steadily). #}
    select
        clip.run_id,
        'length_truncation' as pattern,
        'clip_ratio_rising' as signal,
        clip.window_first_step as start_step,
        clip.step,
        2 as severity_rank,
        clip.value as strength,
        'clip_ratio reached ' || cast({{ round_to('clip.value', 3) }} as string)
        || ' at step ' || clip.step
        || ' (above ' || '{{ var("clip_ratio_max") }}' || '), rising '
        || cast({{ round_to('clip.window_slope', 4) }} as string)
        || ' a step with response_length rising '
        || cast({{ round_to('length.window_slope', 1) }} as string) || ' a step to '
        || cast(cast(round(length.value) as bigint) as string)
            as phrase,
        {{ key_value_list([
            ("'clip_ratio'", 'clip.value'),
            ("'clip_ratio_slope'", 'clip.window_slope'),
            ("'clip_ratio_max'", "cast(" ~ var('clip_ratio_max') ~ " as double)"),
            ("'response_length'", 'length.value'),
            ("'response_length_slope'", 'length.window_slope'),
        ]) }} as measures
    from stats as clip
    inner join stats as length
        on
            clip.run_id = length.run_id
            and clip.step = length.step
            and length.metric = 'response_length'
    where
        clip.metric = 'clip_ratio'
        and clip.value > {{ var('clip_ratio_max') }}
        and clip.window_points = {{ window }}
        and clip.window_slope > 0
        and clip.window_r2 >= {{ var('rising_min_r2') }}
        and length.window_points = {{ window }}
        and length.window_slope > 0
)

{{ finding_rule_end() }}
