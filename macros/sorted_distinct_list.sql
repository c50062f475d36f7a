{% macro sorted_distinct_list(expression) %}
{#- Aggregate: the distinct non-null values, as a list in ascending order. -#}
    {{ return(adapter.dispatch('sorted_distinct_list', 'obs')(expression)) }}
{% endmacro %}

{% macro default__sorted_distinct_list(expression) %}
    array_sort(collect_set({{ expression }}))
{% endmacro %}

{% macro duckdb__sorted_distinct_list(expression) %}
    list(distinct {{ expression }} order by {{ expression }})
{% endmacro %}
