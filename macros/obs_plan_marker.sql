{% macro obs_plan_marker(kind, spec) %}
{#- A marker in compiled SQL that obs's executor replaces at run time:
    `/*obs:<kind> <spec as JSON>*/`. -#}
    {{- return('/*obs:' ~ kind ~ ' ' ~ tojson(spec) ~ '*/') -}}
{% endmacro %}
