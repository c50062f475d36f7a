{% macro list_distinct(list) %}
{#- The distinct non-null elements of a list (in no particular order). -#}
    {{ return(adapter.dispatch('list_distinct', 'obs')(list)) }}
{% endmacro %}

{% macro default__list_distinct(list) %}
    filter(array_distinct({{ list }}), distinct_element -> distinct_element is not null)
{% endmacro %}

{% macro duckdb__list_distinct(list) %}
    list_distinct({{ list }})
{% endmacro %}
