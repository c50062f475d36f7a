{% macro unpivot_columns(relation, columns, name, value) %}
{#- A select of one row per column of `relation` (a CTE name whose columns
    are `columns`, in order): the column's name as `name`, its value as
    `value`. The columns share one type. -#}
    {{ return(adapter.dispatch('unpivot_columns', 'obs')(relation, columns, name, value)) }}
{% endmacro %}

{% macro default__unpivot_columns(relation, columns, name, value) %}
    select stack(
        {{ columns | length }}
        {%- for column in columns %},
        '{{ column | replace("\\", "\\\\") | replace("'", "\\'") }}', {{ adapter.quote(column) }}
        {%- endfor %}
    ) as ({{ name }}, {{ value }})
    from {{ relation }}
{% endmacro %}

{% macro duckdb__unpivot_columns(relation, columns, name, value) %}
    unpivot {{ relation }} on columns(*) into name {{ name }} value {{ value }}
{% endmacro %}
