{{ config(materialized='view') }}
{# Every rule's signals: the rules are one model each
   (int_finding_signals_<pattern>), whose marks of how far each run was
   judged are left out here. A view: the models that read it filter it by
   run, and DuckDB reads only those runs' rows of each rule's table. A new
   rule is a model of its own and a name in this list. #}
{%- set rules = [
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
] %}
with

unioned as (
    {%- for rule in rules %}
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
        from {{ ref('int_finding_signals_' ~ rule).include(database=false) }}
        where pattern is not null
        {%- if not loop.last %}
            union all
        {%- endif %}
    {%- endfor %}
)

select * from unioned
