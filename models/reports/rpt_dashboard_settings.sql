{# The thresholds the combined dashboard (`obs render-dashboard`) draws as
   lines or uses to grey out cells, as the build that made this warehouse set
   them: dbt_project.yml's vars, or the values of `obs build --vars '{...}'`.
   The dashboard reads them here, so a line sits where the marts' own rules
   put the cut. #}
{%- set rule = success_rule() %}
select
    cast({{ var('pass_threshold') }} as double) as pass_threshold,
    {# the build's definition of success (var success, macro success_rule) #}
    '{{ rule.text }}' as success,
    '{{ rule.kind }}' as success_kind,
    {% if rule.function is none -%}
        cast(null as string)
    {%- else -%}
        '{{ rule.function }}'
    {%- endif %} as success_function,
    cast({{ 'null' if rule.threshold is none else rule.threshold }} as double)
        as success_threshold,
    cast(
        {{ var('plateau_variance_threshold') }} as double
    ) as plateau_variance_threshold,
    cast({{ var('fast_learning_iterations') }} as integer)
        as fast_learning_iterations,
    cast(
        {{ var('sample_efficiency_good_score') }} as double
    ) as sample_efficiency_good_score,
    cast({{ var('stuck_cell_min_samples') }} as integer)
        as stuck_cell_min_samples
