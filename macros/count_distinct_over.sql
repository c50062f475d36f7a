{% macro count_distinct_over(expression, partition_by) %}
{#- The number of distinct non-null values of `expression` in the row's
    window partition (`partition_by`: a list of columns). -#}
    {{ return(adapter.dispatch('count_distinct_over', 'obs')(expression, partition_by)) }}
{% endmacro %}

{#- Spark has no DISTINCT in a window: the size of the set. -#}
{% macro default__count_distinct_over(expression, partition_by) %}
    size(collect_set({{ expression }}) over (partition by {{ partition_by | join(', ') }}))
{% endmacro %}

{% macro duckdb__count_distinct_over(expression, partition_by) %}
    count(distinct {{ expression }}) over (partition by {{ partition_by | join(', ') }})
{% endmacro %}
