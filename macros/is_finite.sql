{% macro is_finite(expression) %}
{#- Whether a double is a number other than NaN and the infinities (null
    for null). -#}
    {{ return(adapter.dispatch('is_finite', 'obs')(expression)) }}
{% endmacro %}

{% macro default__is_finite(expression) %}
    (not isnan({{ expression }}) and abs({{ expression }}) != double('infinity'))
{% endmacro %}

{% macro duckdb__is_finite(expression) %}
    isfinite({{ expression }})
{% endmacro %}
