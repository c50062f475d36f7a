{% macro list_where(list, element, condition) %}
{#- The elements of `list` (named `element` in `condition`) for which
    `condition` holds, in order. -#}
    {{ return(adapter.dispatch('list_where', 'obs')(list, element, condition)) }}
{% endmacro %}

{% macro default__list_where(list, element, condition) %}
    filter({{ list }}, {{ element }} -> {{ condition }})
{% endmacro %}

{% macro duckdb__list_where(list, element, condition) %}
    list_filter({{ list }}, {{ element }} -> {{ condition }})
{% endmacro %}
