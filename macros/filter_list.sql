{% macro filter_list(expression, lambda) %}
{#- The elements of a list a lambda (`x -> condition`) keeps, in order. -#}
    {{ return(adapter.dispatch('filter_list', 'obs')(expression, lambda)) }}
{% endmacro %}

{% macro default__filter_list(expression, lambda) %}
    filter({{ expression }}, {{ lambda }})
{% endmacro %}

{% macro duckdb__filter_list(expression, lambda) %}
    list_filter({{ expression }}, {{ lambda }})
{% endmacro %}
