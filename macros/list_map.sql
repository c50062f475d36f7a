{% macro list_map(list, element, body) %}
{#- The list of `body` evaluated for each element of `list` (named `element`
    in `body`), in order. -#}
    {{ return(adapter.dispatch('list_map', 'obs')(list, element, body)) }}
{% endmacro %}

{% macro default__list_map(list, element, body) %}
    transform({{ list }}, {{ element }} -> {{ body }})
{% endmacro %}

{% macro duckdb__list_map(list, element, body) %}
    list_transform({{ list }}, {{ element }} -> {{ body }})
{% endmacro %}
