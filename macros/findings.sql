{#- Findings: the template of a finding rule, the rules' metadata, the
    metrics they judge and the marks of the runs they judged. -#}

{% macro finding_rule_start(reads) %}
{#- The opening of a finding rule's model (int_finding_signals_<pattern>),
    whose own CTEs follow it, the last named `signals` (run_id, pattern,
    signal, start_step, step, severity_rank, strength, phrase, measures:
    one row per flagged step), and whose last line is finding_rule_end.
    It sets the config every rule shares (incremental by run, and the tag
    finding_rule: int_finding_signals checks its rules against it,
    rpt_finding_shades and int_run_findings read their yml entries' meta)
    and opens the `with`: `judged_runs`, int_finding_runs' rows of the runs
    whose history changed since the model judged them (macro changed_runs;
    the rule's CTEs may read its excursion level), then one CTE per entry of
    `reads` (CTE name: relation), the relation's rows of those runs. -#}
    {%- if reads is not mapping -%}
        {{ exceptions.raise_compiler_error("finding_rule_start: reads maps CTE names to relations") }}
    {%- endif -%}
    {{ config(incremental_by(['run_id'])) }}
    {{ config(tags=['finding_rule']) }}
with

judged_runs as (
    {{ changed_runs(ref('int_finding_runs'), ref('int_finding_runs')) }}
),
{%- for name, relation in reads.items() %}

{{ name }} as (
    {{ changed_runs(relation, ref('int_finding_runs')) }}
),
{%- endfor %}
{% endmacro %}

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

{% macro judged_metrics() %}
{#- The canonical metrics the findings judge point by point, as an SQL list:
    int_metric_scores scores them, int_run_findings counts a run's steps
    over them. -#}
(
    'loss', 'grad_norm', 'reward_mean', 'extraction_rate', 'empty_responses',
    'entropy', 'kl', 'clip_ratio', 'response_length', 'elo', 'cache_hit_rate',
    'max_total_s', 'max_volume_reload_s'
)
{%- endmacro %}

{% macro judged_run_marks(columns, judged_runs='judged_runs') %}
{#- The findings models' marks of how far each run was judged: a select of
    one row per run of `judged_runs` (run_id, run_parts) with the model's
    other `columns` null, in the model's column order (run_id first,
    run_parts last), to union (by position) under its rows. -#}
    {%- if columns is string -%}
        {{ exceptions.raise_compiler_error("judged_run_marks: columns is a list of column names") }}
    {%- endif -%}
    select
        run_id,
        {%- for column in columns %}
        null as {{ column }},
        {%- endfor %}
        run_parts
    from {{ judged_runs }}
{%- endmacro %}
