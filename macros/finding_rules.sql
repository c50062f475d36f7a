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
        {%- set unnamed = rules | reject('in', named) | sort -%}
        {%- set not_rules = named | reject('in', rules) | sort -%}
        {%- if unnamed or not_rules -%}
            {{ exceptions.raise_compiler_error(
                "finding_rules: name every model tagged finding_rule, and only those;"
                ~ " not named: " ~ (unnamed | join(', ') or 'none')
                ~ "; named but no rule: " ~ (not_rules | join(', ') or 'none')) }}
        {%- endif -%}
    {%- endif -%}
    {{ return(named) }}
{%- endmacro %}
