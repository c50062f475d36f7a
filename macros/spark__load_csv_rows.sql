{% macro spark__load_csv_rows(model, agate_table) %}
{#- dbt-spark's seed loading with every value written as a quoted literal,
    escaped: dbt-spark's own binds a text by wrapping it in quotes unescaped
    (its session method formats the statement with %), so a seed text
    holding an apostrophe (`GRPO's`) breaks the insert. Each value is cast
    to its column's type, as dbt-spark does. -#}
    {%- set column_override = model['config'].get('column_types', {}) -%}
    {%- set statements = [] -%}
    {%- for chunk in agate_table.rows | batch(get_batch_size()) -%}
        {%- set sql -%}
            insert into {{ this.render() }} values
            {% for row in chunk -%}
                ({%- for col_name in agate_table.column_names -%}
                    {%- set type = column_override.get(
                        col_name, adapter.convert_type(agate_table, loop.index0)) -%}
                    {%- set value = row[loop.index0] -%}
                    {%- if value is none -%}
                        cast(null as {{ type }})
                    {%- else -%}
                        cast('{{ value | string | replace("\\", "\\\\") | replace("'", "\\'") }}' as {{ type }})
                    {%- endif -%}
                    {{- ',' if not loop.last -}}
                {%- endfor -%}){{ ',' if not loop.last }}
            {% endfor %}
        {%- endset -%}
        {%- do adapter.add_query(sql, abridge_sql_log=True) -%}
        {%- if loop.first -%}
            {%- do statements.append(sql) -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return(statements[0]) }}
{% endmacro %}
