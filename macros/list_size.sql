{% macro list_size(expression) %}
{#- The number of elements of a list; 0 for a null list. -#}
    {{ return(adapter.dispatch('list_size', 'obs')(expression)) }}
{% endmacro %}

{#- Spark: size(null) is -1 outside ANSI mode. -#}
{% macro default__list_size(expression) %}
    coalesce(case when {{ expression }} is not null then size({{ expression }}) end, 0)
{% endmacro %}

{% macro duckdb__list_size(expression) %}
    len(coalesce({{ expression }}, []))
{% endmacro %}
