{% macro bind(name, value, body) %}
{#- `body` with `value` computed once and named `name` in it (a let):
    a value `body` reads several times is computed once per row. -#}
    {{ return(adapter.dispatch('bind', 'obs')(name, value, body)) }}
{% endmacro %}

{% macro default__bind(name, value, body) %}
    element_at(transform(array({{ value }}), {{ name }} -> {{ body }}), 1)
{% endmacro %}

{% macro duckdb__bind(name, value, body) %}
    list_transform([{{ value }}], {{ name }} -> {{ body }})[1]
{% endmacro %}
