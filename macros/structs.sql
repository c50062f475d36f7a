{#- Maps and structs: reading a map, building a struct, unpivoting columns
    into rows. -#}

{% macro map_members(expression, key_name, value_name, position_name) %}
{#- Select-list items making one row per member of a map (none for an empty
    or null map): its key, its value and its position from 1, in the
    map's order, as columns named by the last three arguments. -#}
    {{ return(adapter.dispatch('map_members', 'obs')(expression, key_name, value_name, position_name)) }}
{% endmacro %}

{% macro default__map_members(expression, key_name, value_name, position_name) %}
    inline(transform(
        case when size({{ expression }}) > 0 then sequence(1, size({{ expression }})) else array() end,
        member_position -> named_struct(
            '{{ key_name }}', element_at(map_keys({{ expression }}), member_position),
            '{{ value_name }}', element_at(map_values({{ expression }}), member_position),
            '{{ position_name }}', member_position
        )
    ))
{% endmacro %}

{% macro duckdb__map_members(expression, key_name, value_name, position_name) %}
    unnest(map_keys({{ expression }})) as {{ key_name }},
    unnest(map_values({{ expression }})) as {{ value_name }},
    generate_subscripts(map_keys({{ expression }}), 1) as {{ position_name }}
{% endmacro %}

{% macro map_value(expression, key) %}
{#- The value a map holds under a key; null when the map lacks the key or
    is null. -#}
    {{ return(adapter.dispatch('map_value', 'obs')(expression, key)) }}
{% endmacro %}

{#- Spark: try_element_at, null for a missing key in ANSI mode too. -#}
{% macro default__map_value(expression, key) %}
    try_element_at({{ expression }}, {{ key }})
{% endmacro %}

{% macro duckdb__map_value(expression, key) %}
    {{ expression }}[{{ key }}]
{% endmacro %}

{% macro struct_from(fields) %}
{#- A struct value from `fields`, a dict of field name to SQL expression
    (fields in the dict's order). -#}
    {%- if fields is not mapping or not fields -%}
        {{ exceptions.raise_compiler_error("struct_from: fields is a dict of name to SQL") }}
    {%- endif -%}
    {{ return(adapter.dispatch('struct_from', 'obs')(fields)) }}
{% endmacro %}

{% macro default__struct_from(fields) %}
    named_struct(
    {%- for name, expression in fields.items() -%}
        '{{ name }}', {{ expression }}{{ ", " if not loop.last }}
    {%- endfor -%}
    )
{% endmacro %}

{% macro duckdb__struct_from(fields) %}
    {
    {%- for name, expression in fields.items() -%}
        '{{ name }}': {{ expression }}{{ ", " if not loop.last }}
    {%- endfor -%}
    }
{% endmacro %}

{% macro unpivot_columns(relation, columns, name, value, keep=[]) %}
{#- A select of one row per column of `relation` (a CTE name whose columns
    are `keep` and `columns`, in order): the `keep` columns as they are,
    the column's name as `name`, its value as `value`. The columns share one
    type. A null value may give a row (Spark) or none (DuckDB): filter
    them alike. -#}
    {{ return(adapter.dispatch('unpivot_columns', 'obs')(relation, columns, name, value, keep)) }}
{% endmacro %}

{% macro default__unpivot_columns(relation, columns, name, value, keep=[]) %}
    select
        {%- for column in keep %}
        {{ column }},
        {%- endfor %}
        stack(
        {{ columns | length }}
        {%- for column in columns %},
        '{{ column | replace("\\", "\\\\") | replace("'", "\\'") }}', {{ adapter.quote(column) }}
        {%- endfor %}
    ) as ({{ name }}, {{ value }})
    from {{ relation }}
{% endmacro %}

{% macro duckdb__unpivot_columns(relation, columns, name, value, keep=[]) %}
    unpivot {{ relation }}
    on {% if keep -%}
        {%- for column in columns %}{{ adapter.quote(column) }}{{ ', ' if not loop.last }}{% endfor %}
    {%- else %}columns(*){% endif %}
    into name {{ name }} value {{ value }}
{% endmacro %}
