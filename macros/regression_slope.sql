{% macro regression_slope(y, x) %}
    {{ return(adapter.dispatch('regression_slope', 'obs')(y, x)) }}
{% endmacro %}

{% macro default__regression_slope(y, x) %}
    (covar_pop({{ y }}, {{ x }}) / nullif(var_pop({{ x }}), 0))
{% endmacro %}

{% macro duckdb__regression_slope(y, x) %}
    regr_slope({{ y }}, {{ x }})
{% endmacro %}
