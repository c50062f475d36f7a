{% macro significant(expression, digits=12) %}
{#- ``expression`` rounded to ``digits`` significant digits (zero, null and
    non-finite values as they are): for statistics whose last bits depend on
    the order a parallel aggregate added in. -#}
    case
        when ({{ expression }}) is null or ({{ expression }}) = 0
            or not {{ is_finite(expression) }}
            then ({{ expression }})
        else {{ round_to(
            '(' ~ expression ~ ')',
            (digits - 1) ~ ' - cast(floor(log10(abs(' ~ expression ~ '))) as integer)'
        ) }}
    end
{% endmacro %}
