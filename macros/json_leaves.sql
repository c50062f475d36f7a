{% macro json_leaves(json_expression) %}
    {{ return(adapter.dispatch('json_leaves', 'obs')(json_expression)) }}
{% endmacro %}

{#- The scalar leaves of a JSON object as rows (key as a dotted path, value as
    JSON text, type), to be used in a lateral join. A list is one leaf (its
    JSON text): config lists such as target_modules read best whole. -#}
{% macro default__json_leaves(json_expression) %}
    {{ exceptions.raise_compiler_error("json_leaves: no implementation for " ~ adapter.type()) }}
{% endmacro %}

{% macro duckdb__json_leaves(json_expression) %}
    (
        select
            regexp_replace(regexp_replace(fullkey, '^\$\.', ''), '"', '', 'g') as key,
            value,
            lower(type) as type
        from json_tree({{ json_expression }})
        where fullkey <> '$'
            and type <> 'OBJECT'
            and not contains(path, '[')
    )
{% endmacro %}
