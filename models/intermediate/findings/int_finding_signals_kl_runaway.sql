{{ config(incremental_by(['run_id'])) }}
{# The rule kl_runaway: KL above its limit (critical above twice it), or
   rising steadily on course to reach it.

   One row per signal (a flagged step) of the runs judged, and one per run
   judged with a null pattern whose run_parts says how far it was judged
   (macro changed_runs; see int_finding_runs). The thresholds are dbt vars,
   described with the rule in fct_run_findings' documentation. #}
{%- set window = var('plateau_window') -%}
with

judged_runs as (
    {{ changed_runs(ref('int_finding_runs'), ref('int_finding_runs')) }}
),

stats as (
    {{ changed_runs(ref('int_metric_scores'), ref('int_finding_runs')) }}
),

signals as (
    select
        run_id,
        'kl_runaway' as pattern,
        'kl_above_max' as signal,
        step as start_step,
        step,
        case when value > 2 * {{ var('kl_max') }} then 3 else 2 end as severity_rank,
        value as strength,
        'kl reached ' || cast({{ round_to('value', 3) }} as string) || ' at step ' || step
        || ' (limit '
        || '{{ var("kl_max") }}' || ')' as phrase,
        {{ key_value_list([
            ("'kl'", 'value'),
            ("'kl_max'", "cast(" ~ var('kl_max') ~ " as double)"),
        ]) }} as measures
    from stats
    where metric = 'kl' and value > {{ var('kl_max') }}
    union all
    select
        run_id,
        'kl_runaway' as pattern,
        'kl_rising' as signal,
        window_first_step as start_step,
        step,
        2 as severity_rank,
        window_slope as strength,
        'kl rose steadily ' || cast({{ round_to('window_slope', 4) }} as string)
        || ' a step over steps '
        || window_first_step || '-' || step || ' to ' || cast({{ round_to('value', 3) }} as string)
        || ', on course for ' || '{{ var("kl_max") }}' || ' within '
        || '{{ var("kl_projection_steps") }}' || ' steps' as phrase,
        {{ key_value_list([
            ("'kl'", 'value'),
            ("'kl_slope'", 'window_slope'),
            ("'kl_r_squared'", 'window_r2'),
            ("'kl_projected'", "value + window_slope * " ~ var('kl_projection_steps')),
        ]) }} as measures
    from stats
    where
        metric = 'kl'
        and value <= {{ var('kl_max') }}
        and window_points = {{ window }}
        and window_slope > 0
        and window_r2 >= {{ var('rising_min_r2') }}
        and value + window_slope * {{ var('kl_projection_steps') }} >= {{ var('kl_max') }}
),

final as (
    select
        signals.*,
        judged_runs.run_parts
    from signals
    inner join judged_runs using (run_id)
    union all
    {#- one row per run judged, pattern null: how far it was judged #}
    {{ judged_run_marks([
        'pattern', 'signal', 'start_step', 'step', 'severity_rank', 'strength',
        'phrase', 'measures',
    ]) }}
)

select * from final
