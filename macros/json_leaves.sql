{% macro json_leaves(relation, id_column, json_column) %}
    {{ return(adapter.dispatch('json_leaves', 'obs')(relation, id_column, json_column)) }}
{% endmacro %}

{#- A select of the scalar leaves of a JSON object column, one row per
    (id, key): key is the path of member names joined with `.`, a name that
    holds `.`, `"`, `[` or `]` quoted (`"optimizer.lr"` is not the nested
    `optimizer.lr`); value is the JSON text; type the JSON type. A list is one
    leaf (its JSON text): config lists such as target_modules read best whole. -#}
{% macro default__json_leaves(relation, id_column, json_column) %}
    {%- if execute -%}
        {{ exceptions.raise_compiler_error("json_leaves: no implementation for " ~ adapter.type()) }}
    {%- endif -%}
{% endmacro %}

{% macro duckdb__json_leaves(relation, id_column, json_column) %}
    with recursive tree as (
        select
            source.{{ id_column }} as id_value,
            node.id,
            node.parent,
            node.key,
            node.value,
            node.type
        from {{ relation }} as source,
            json_tree(source.{{ json_column }}) as node
    ),

    named as (
        select id_value, id, type, value, '' as path, false as in_list
        from tree
        where parent is null

        union all

        select
            child.id_value,
            child.id,
            child.type,
            child.value,
            (case when up.path = '' then '' else up.path || '.' end)
            || case
                when regexp_matches(child.key, '[."\[\]]')
                    then '"' || replace(child.key, '"', '\"') || '"'
                else child.key
            end,
            up.in_list or up.type = 'ARRAY'
        from tree as child
        inner join named as up
            on child.id_value = up.id_value
            and child.parent = up.id
    )

    select
        id_value as {{ id_column }},
        path as key,
        value,
        lower(type) as type
    from named
    where path <> '' and type <> 'OBJECT' and not in_list
{% endmacro %}
