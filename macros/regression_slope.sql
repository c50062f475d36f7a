{% macro regression_slope(y, x) %}
    {{ return(adapter.dispatch('regression_slope', 'obs')(y, x)) }}
{% endmacro %}

{# Null, not NaN, when x does not vary (one observed iteration). #}
{% macro default__regression_slope(y, x) %}
    case
        when var_pop({{ x }}) > 0
            then covar_pop({{ y }}, {{ x }}) / var_pop({{ x }})
    end
{% endmacro %}

{% macro duckdb__regression_slope(y, x) %}
    case when var_pop({{ x }}) > 0 then regr_slope({{ y }}, {{ x }}) end
{% endmacro %}

{% macro spark__regression_slope(y, x) %}
    case when var_pop({{ x }}) > 0 then regr_slope({{ y }}, {{ x }}) end
{% endmacro %}
