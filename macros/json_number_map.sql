{% macro json_number_map(key, value) %}
{#- Aggregate: a JSON object (DuckDB's JSON; text on Spark) of the group's
    keys (texts, distinct, without quotes or backslashes) and their numbers,
    keys in ascending order, the numbers as DuckDB's JSON writes doubles. -#}
    {{ return(adapter.dispatch('json_number_map', 'obs')(key, value)) }}
{% endmacro %}

{% macro default__json_number_map(key, value) %}
    concat('{', array_join(transform(
        array_sort(collect_list(named_struct('key', {{ key }}, 'value', {{ value }}))),
        json_member -> concat('"', json_member.key, '":', {{ _json_double_text('json_member.value') }})
    ), ','), '}')
{% endmacro %}

{% macro duckdb__json_number_map(key, value) %}
    to_json(map(list({{ key }} order by {{ key }}), list({{ value }} order by {{ key }})))
{% endmacro %}
