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
