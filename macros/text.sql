{#- Text: regular expressions and a stable hash. -#}

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

{% macro stable_hash(expression) %}
{#- A sort key that is the same on every build and every engine, for
    seeded samples: the md5 of the expression's text as 32 lowercase hex
    digits (sorting them sorts by the 128-bit number they write). Both
    DuckDB and Spark compute md5 of the same UTF-8 text, so one lake gives
    one sample on both. -#}
    md5(cast({{ expression }} as string))
{% endmacro %}
