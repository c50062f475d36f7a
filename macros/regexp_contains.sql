{% macro regexp_contains(expression, pattern) %}
{#- Whether a text holds a match of a regular expression anywhere (anchor
    the pattern with ^ and $ for the whole text). `pattern`: SQL text of a
    string without backslashes (Spark's string literals read them as escapes). -#}
    {{ return(adapter.dispatch('regexp_contains', 'obs')(expression, pattern)) }}
{% endmacro %}

{% macro default__regexp_contains(expression, pattern) %}
    ({{ expression }} rlike {{ pattern }})
{% endmacro %}

{% macro duckdb__regexp_contains(expression, pattern) %}
    regexp_matches({{ expression }}, {{ pattern }})
{% endmacro %}
