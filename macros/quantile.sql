{% macro quantile(expression, fraction) %}
    {% if fraction is not number or fraction < 0 or fraction > 1 %}
        {{ exceptions.raise_compiler_error("quantile: fraction must be a number in [0, 1]") }}
    {% endif %}
    {{ return(adapter.dispatch('quantile', 'obs')(expression, fraction)) }}
{% endmacro %}

{% macro default__quantile(expression, fraction) %}
    percentile_approx({{ expression }}, {{ fraction }})
{% endmacro %}

{% macro duckdb__quantile(expression, fraction) %}
    quantile_cont({{ expression }}, {{ fraction }})
{% endmacro %}

{#- Spark's percentile is exact, with linear interpolation (quantile_cont's). -#}
{% macro spark__quantile(expression, fraction) %}
    percentile({{ expression }}, {{ fraction }})
{% endmacro %}
