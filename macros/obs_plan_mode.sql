{% macro obs_plan_mode() %}
{#- '' in an ordinary dbt run; 'full' or 'incremental' while obs compiles
    the plan its executor runs (`obs build`, `obs watch`). In the plan, the
    macros that would query the warehouse or the lake while compiling
    (changed_groups, changed_runs_predicate, lake_source, newly_published)
    write a marker instead, which the executor fills in when it runs the
    model, by the rule documented in the macro. -#}
    {%- if not execute -%}
        {{ return('') }}
    {%- endif -%}
    {{ return(env_var('OBS_PLAN_MODE', '')) }}
{% endmacro %}
