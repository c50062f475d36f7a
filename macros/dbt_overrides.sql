{#- dbt's own macros, replaced for this project: is_incremental (for the
    build plan), DuckDB's delete+insert and Spark's seed loading. -#}

{% macro is_incremental() %}
{#- dbt's own is_incremental, except while obs compiles its build plan
    (obs_plan_mode): then it answers for the variant being compiled, since
    the plan is compiled once against no warehouse and run on any. -#}
    {%- set mode = obs_plan_mode() -%}
    {%- if mode == 'full' -%}
        {{ return(false) }}
    {%- elif mode == 'incremental' -%}
        {{ return(model.config.materialized == 'incremental') }}
    {%- else -%}
        {{ return(dbt.is_incremental()) }}
    {%- endif -%}
{% endmacro %}

{% macro duckdb__get_delete_insert_merge_sql(target, source, unique_key, dest_columns, incremental_predicates) -%}
{#- delete+insert for this project's incremental models (delete_insert_sql). -#}
{%- set keys = [unique_key] if unique_key is string else unique_key -%}
{{ delete_insert_sql(target, source, keys, get_quoted_csv(dest_columns | map(attribute="name")), incremental_predicates) }}
{%- endmacro %}

{% macro delete_insert_sql(target, source, keys, columns, predicates=none) -%}
{#- The statements that replace the rows of `target` whose key (`keys`, a
    list of columns) is among the new rows of `source`: delete them, insert
    the new rows (`columns`: the quoted column list). dbt-duckdb joins the
    target with every new row (`delete ... using <new rows>`), so replacing
    one iteration of 8,000 rollouts matches each old row 8,000 times; this
    joins with the distinct keys instead. dbt's delete+insert on DuckDB and
    obs's executor (analyses/obs_delete_insert.sql) both run these. -#}
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
        {%- for predicate in predicates or [] %}
        and {{ predicate }}
        {%- endfor %};
{%- endif %}

    insert into {{ target }} ({{ columns }})
    (
        select {{ columns }}
        from {{ source }}
    )
{%- endmacro %}

{#- A seed's rows on Spark, as dbt-spark loads them but with each value
    written as an escaped literal: dbt-spark's session method puts the
    values into '%s' unescaped, so a text holding a quote (metric_audit_causes'
    "the run's reward_weights") broke the statement. Every value is a text
    cast to the column's type, as dbt-spark does it. -#}
{% macro spark__load_csv_rows(model, agate_table) %}
    {%- set batch_size = get_batch_size() -%}
    {%- set column_override = model['config'].get('column_types', {}) -%}
    {%- set statements = [] -%}
    {%- for chunk in agate_table.rows | batch(batch_size) -%}
        {%- set sql -%}
            insert into {{ this.render() }} values
            {% for row in chunk -%}
                ({%- for col_name in agate_table.column_names -%}
                    {%- set inferred_type = adapter.convert_type(agate_table, loop.index0) -%}
                    {%- set type = column_override.get(col_name, inferred_type) -%}
                    {%- set value = row[loop.index0] -%}
                    {%- if value is none -%}
                        cast(null as {{ type }})
                    {%- else -%}
                        cast('{{ value | string | replace("\\", "\\\\") | replace("'", "\\'") }}' as {{ type }})
                    {%- endif -%}
                    {%- if not loop.last %}, {% endif -%}
                {%- endfor -%})
                {%- if not loop.last %},{% endif %}
            {% endfor %}
        {%- endset -%}
        {%- do adapter.add_query(sql, abridge_sql_log=True) -%}
        {%- if loop.index0 == 0 -%}
            {%- do statements.append(sql) -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return(statements[0]) }}
{% endmacro %}
