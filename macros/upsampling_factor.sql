{% macro upsampling_factor(factor, column) %}
{#- One of the three terms of upsampling_score, whose weights live here only:
    final_score: (1 - final score) * 2; learning_rate: -slope * 1 (a null slope
    counts as 0); forgetting: forgetting events * 0.5. -#}
    {%- set weights = {'final_score': 2, 'learning_rate': 1, 'forgetting': 0.5} -%}
    {%- if factor not in weights -%}
        {{ exceptions.raise_compiler_error(
            "upsampling_factor: factor '" ~ factor ~ "' is not one of "
            ~ weights.keys() | join(', ')
        ) }}
    {%- endif -%}
    {%- if factor == 'final_score' -%}
        (1 - {{ column }}) * {{ weights[factor] }}
    {%- elif factor == 'learning_rate' -%}
        (0.0 - coalesce({{ column }}, 0)) * {{ weights[factor] }}
    {%- else -%}
        {{ column }} * {{ weights[factor] }}
    {%- endif -%}
{% endmacro %}
