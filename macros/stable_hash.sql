{% macro stable_hash(expression) %}
{#- A sort key that is the same on every build and every engine, for
    seeded samples: the md5 of the expression's text as 32 lowercase hex
    digits (sorting them sorts by the 128-bit number they write). Both
    DuckDB and Spark compute md5 of the same UTF-8 text, so one lake gives
    one sample on both. -#}
    md5(cast({{ expression }} as string))
{% endmacro %}
