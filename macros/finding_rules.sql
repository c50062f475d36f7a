{% macro finding_rules(patterns) %}
{#- The rule models (int_finding_signals_<pattern>) of `patterns`, which
    int_finding_signals names so that dbt knows, when it parses the
    project, that it reads them. When the model compiles, the project's
    graph holds every rule (the models tagged finding_rule by macro
    finding_rule): one it does not name, or a name that is no rule, fails
    the build with the list to fix. -#}
    {%- if patterns is string -%}
        {{ exceptions.raise_compiler_error("finding_rules: patterns is a list of rule names") }}
    {%- endif -%}
    {%- set named = [] -%}
    {%- for pattern in patterns -%}
        {%- do named.append('int_finding_signals_' ~ pattern) -%}
    {%- endfor -%}
    {#- (a unit test's graph holds no nodes: nothing to check) #}
    {%- if execute and graph.get('nodes') -%}
        {%- set rules = [] -%}
        {%- for node in graph.nodes.values() -%}
            {%- if node.resource_type == 'model' and 'finding_rule' in node.tags -%}
                {%- do rules.append(node.name) -%}
            {%- endif -%}
        {%- endfor -%}
        {%- if rules | sort != named | sort -%}
            {{ exceptions.raise_compiler_error(
                "finding_rules: the rules named (" ~ (named | sort | join(', '))
                ~ ") are not the project's models tagged finding_rule ("
                ~ (rules | sort | join(', ')) ~ ")") }}
        {%- endif -%}
    {%- endif -%}
    {{ return(named) }}
{%- endmacro %}
