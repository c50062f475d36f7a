{% macro incremental_by(grain, unique_key=none, merges_held_rows=false) %}
{#- The config of an incremental model, on each adapter by its own strategy:
    `{{ config(incremental_by(['run_id', 'iteration'])) }}`. `grain`: the
    columns of the groups a build replaces whole (every row of a group it
    reads again is in its new rows: see changed_rows). `unique_key`: the
    key DuckDB deletes by (default the grain). merges_held_rows: the model
    reads its own table ({{ this }}) to merge new rows into what it holds
    (dim_prompts). -#}
    {%- if not grain or grain is string -%}
        {{ exceptions.raise_compiler_error("incremental_by: grain is a list of columns") }}
    {%- endif -%}
    {{ return(adapter.dispatch('incremental_by', 'obs')(grain, unique_key or grain, merges_held_rows)) }}
{% endmacro %}

{#- DuckDB and any engine with DELETE: delete the new rows' keys, insert the
    rows (the project's delete+insert, macros/delete_insert.sql). -#}
{% macro default__incremental_by(grain, unique_key, merges_held_rows) %}
    {{ return({'materialized': 'incremental', 'unique_key': unique_key}) }}
{% endmacro %}

{#- Spark: parquet tables partitioned by the grain, whose new rows replace
    their partitions (insert_overwrite, dynamic partition overwrite). A model
    that merges into its own table cannot overwrite a path it reads: it is
    rebuilt whole (a table). With Delta (var spark_file_format: delta, on a
    cluster that has it) both merge by the key instead. -#}
{% macro spark__incremental_by(grain, unique_key, merges_held_rows) %}
    {%- set file_format = var('spark_file_format', 'parquet') -%}
    {%- if file_format in ['delta', 'iceberg', 'hudi'] -%}
        {{ return({
            'materialized': 'incremental', 'incremental_strategy': 'merge',
            'file_format': file_format, 'unique_key': unique_key}) }}
    {%- elif merges_held_rows -%}
        {{ return({'materialized': 'table', 'file_format': file_format}) }}
    {%- else -%}
        {{ return({
            'materialized': 'incremental', 'incremental_strategy': 'insert_overwrite',
            'file_format': file_format, 'partition_by': grain}) }}
    {%- endif -%}
{% endmacro %}
