{% macro stable_hash(expression) %}
    {{ return(adapter.dispatch('stable_hash', 'obs')(expression)) }}
{% endmacro %}

{% macro default__stable_hash(expression) %}
    xxhash64({{ expression }})
{% endmacro %}

{% macro duckdb__stable_hash(expression) %}
    hash({{ expression }})
{% endmacro %}
