{% macro finding_rules_meta(key) %}
{#- What the finding rules declare under meta `key` in their yml entries
    (the models tagged finding_rule), merged into one mapping of lower-case
    names to values: `labels` (pattern: the finding's title) and `shades`
    (signal: the metrics it shades on the run report's charts). Read from
    the project's graph, so empty while dbt parses and in a unit test (whose
    graph holds no nodes: its overrides give the value). Two rules that give one
    name different values, or a name or a text with a quote, fail the build. -#}
    {%- set merged = {} -%}
    {%- for node in (graph.get('nodes', {}).values() if execute else []) -%}
        {%- if node.resource_type == 'model' and 'finding_rule' in node.tags -%}
            {%- for name, value in (node.config.meta.get(key) or {}).items() -%}
                {%- set texts = value if value is sequence and value is not string else [value] -%}
                {%- if not modules.re.fullmatch('[a-z][a-z0-9_]*', name)
                    or "'" in texts | map('string') | join(' ') -%}
                    {{ exceptions.raise_compiler_error(
                        node.name ~ ": meta " ~ key ~ " " ~ name
                        ~ ": a lower-case name, and texts without a quote") }}
                {%- elif name in merged and merged[name] != value -%}
                    {{ exceptions.raise_compiler_error(
                        node.name ~ ": meta " ~ key ~ " " ~ name ~ " is "
                        ~ merged[name] ~ " in another rule") }}
                {%- endif -%}
                {%- do merged.update({name: value}) -%}
            {%- endfor -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return(merged) }}
{%- endmacro %}
