{{ config(materialized='view') }}
{# Every rule's signals: the models tagged finding_rule (one a rule,
   int_finding_signals_<pattern>, macro finding_rule), without their marks
   of how far each run was judged. A view: the models that read it filter
   it by run, and DuckDB reads only those runs' rows of each rule's table.

   dbt learns what a model reads when it parses it, before the project's
   graph exists, so the rules read here are named here; the build checks
   them against the graph's rules (macro finding_rules). #}
with

unioned as (
    {%- for rule in finding_rules([
        'training_instability',
        'grad_spike_reward_collapse',
        'performance_plateau',
        'infrastructure_bottleneck',
        'model_quality_degradation',
        'power_law_scaling',
        'prefix_cache_inefficiency',
        'length_truncation',
        'entropy_collapse_plateau',
        'kl_runaway',
        'held_out_collapse',
        'grpo_signal_loss',
    ]) %}
        select
            run_id,
            pattern,
            signal,
            start_step,
            step,
            severity_rank,
            strength,
            phrase,
            measures
        from {{ ref(rule).include(database=false) }}
        where pattern is not null
        {%- if not loop.last %}
            union all
        {%- endif %}
    {%- endfor %}
)

select * from unioned
