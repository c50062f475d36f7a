{% macro empty_list(element_type) %}
{#- An empty list of `element_type` (DuckDB's type name, as the lake sources
    declare them: varchar, double, ...). -#}
    {{ return(adapter.dispatch('empty_list', 'obs')(element_type)) }}
{% endmacro %}

{% macro default__empty_list(element_type) %}
    cast(array() as array<{{ spark_column_type(element_type) }}>)
{% endmacro %}

{% macro duckdb__empty_list(element_type) %}
    []::{{ element_type }}[]
{% endmacro %}
