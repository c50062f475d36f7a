{% macro list_fold(list, accumulated, element, body) %}
{#- Folds a non-empty list from its first element, left to right: the
    first element, then `body` (of `accumulated`, the value so far, and
    `element`, the next one; the same type as the elements) for each next
    element. Summing with `a + b` adds in the list's order, so both engines
    give the same bits. Callers guard the empty list. -#}
    {{ return(adapter.dispatch('list_fold', 'obs')(list, accumulated, element, body)) }}
{% endmacro %}

{% macro default__list_fold(list, accumulated, element, body) %}
    aggregate(
        slice({{ list }}, 2, greatest(size({{ list }}), 1)),
        element_at({{ list }}, 1),
        ({{ accumulated }}, {{ element }}) -> {{ body }}
    )
{% endmacro %}

{% macro duckdb__list_fold(list, accumulated, element, body) %}
    list_reduce({{ list }}, ({{ accumulated }}, {{ element }}) -> {{ body }})
{% endmacro %}
