{% macro is_incremental() %}
{#- dbt's own is_incremental, except while obs compiles its build plan
    (obs_plan_mode): then it answers for the variant being compiled, since
    the plan is compiled once against no warehouse and run on any. -#}
    {%- set mode = obs_plan_mode() -%}
    {%- if mode == 'full' -%}
        {{ return(false) }}
    {%- elif mode == 'incremental' -%}
        {{ return(model.config.materialized == 'incremental') }}
    {%- else -%}
        {{ return(dbt.is_incremental()) }}
    {%- endif -%}
{% endmacro %}
