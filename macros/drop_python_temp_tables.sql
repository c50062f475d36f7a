{% macro drop_python_temp_tables(relation) %}
{#- An incremental dbt Python model on DuckDB writes its new rows to a plain
    table named <model>__dbt_tmp<time> that dbt-duckdb never drops (it takes
    it for a temporary table). This post-hook drops every such table. -#}
{%- if execute -%}
    {%- set leftovers = run_query(
        "select table_name from information_schema.tables where table_schema = '"
        ~ relation.schema ~ "' and table_name like '"
        ~ relation.identifier ~ "\\_\\_dbt\\_tmp%' escape '\\'"
    ) -%}
    {%- for row in leftovers.rows %}
        drop table if exists {{ relation.schema }}."{{ row[0] }}";
    {%- endfor %}
{%- endif -%}
{% endmacro %}
