{% macro list_element(expression, position) %}
{#- The element of a list at a position counted from 1; null past its end
    or for a null list. -#}
    {{ return(adapter.dispatch('list_element', 'obs')(expression, position)) }}
{% endmacro %}

{#- Spark: element_at counts from 1 (outside ANSI mode, null past the end). -#}
{% macro default__list_element(expression, position) %}
    element_at({{ expression }}, {{ position }})
{% endmacro %}

{% macro duckdb__list_element(expression, position) %}
    {{ expression }}[{{ position }}]
{% endmacro %}
