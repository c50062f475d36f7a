{#- The build plan: the mode obs compiles it in and the markers that stand
    for warehouse queries while it does. -#}

{% macro obs_plan_mode() %}
{#- '' in an ordinary dbt run; 'full' or 'incremental' while obs compiles
    the plan its executor runs (`obs build`, `obs watch`). In the plan, the
    macros that would query the warehouse or the lake while compiling
    (changed_groups, changed_runs_predicate, lake_source, newly_published)
    write a marker instead, which the executor fills in when it runs the
    model, by the rule documented in the macro: the marker carries the
    macro's SQL with slots for the values (macros/incremental.sql). -#}
    {%- if not execute -%}
        {{ return('') }}
    {%- endif -%}
    {{ return(env_var('OBS_PLAN_MODE', '')) }}
{% endmacro %}

{% macro obs_plan_marker(kind, spec) %}
{#- A marker in compiled SQL that obs's executor replaces at run time:
    `/*obs:<kind> <spec as JSON>*/`. -#}
    {{- return('/*obs:' ~ kind ~ ' ' ~ tojson(spec) ~ '*/') -}}
{% endmacro %}
