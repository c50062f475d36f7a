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
