{% macro duckdb__get_delete_insert_merge_sql(target, source, unique_key, dest_columns, incremental_predicates) -%}
{#- delete+insert for this project's incremental models. dbt-duckdb joins
    the target with every new row (`delete ... using <new rows>`), so
    replacing one iteration of 8,000 rollouts matches each old row 8,000
    times; this joins with the distinct keys instead. -#}
{%- set dest_cols_csv = get_quoted_csv(dest_columns | map(attribute="name")) -%}
{%- set keys = [unique_key] if unique_key is string else unique_key -%}
{%- if keys %}
    delete from {{ target }} as dbt_incremental_target
    using (
        select distinct {{ keys | join(", ") }}
        from {{ source }}
    ) as dbt_incremental_keys
    where
        {%- for key in keys %}
        dbt_incremental_keys.{{ key }} = dbt_incremental_target.{{ key }}
        {{- " and" if not loop.last }}
        {%- endfor %}
        {%- for predicate in incremental_predicates or [] %}
        and {{ predicate }}
        {%- endfor %};
{%- endif %}

    insert into {{ target }} ({{ dest_cols_csv }})
    (
        select {{ dest_cols_csv }}
        from {{ source }}
    )
{%- endmacro %}
