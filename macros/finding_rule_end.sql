{% macro finding_rule_end() %}
{#- The close of a finding rule's model (see finding_rule_start), after its
    `signals` CTE: each signal of a run judged with the run's run_parts,
    and one mark per run judged (pattern null, macro judged_run_marks)
    whose run_parts says how far it was judged, so a run without a finding
    is not judged again at every build. -#}
    {%- set columns = [
        'pattern', 'signal', 'start_step', 'step', 'severity_rank', 'strength',
        'phrase', 'measures',
    ] %},

final as (
    select
        signals.run_id,
        {%- for column in columns %}
        signals.{{ column }},
        {%- endfor %}
        judged_runs.run_parts
    from signals
    inner join judged_runs using (run_id)
    union all
    {{ judged_run_marks(columns) }}
)

select * from final
{%- endmacro %}
