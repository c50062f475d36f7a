{#- What obs's executor runs to merge an incremental model's new rows on
    DuckDB: the statements of delete_insert_sql (macros/dbt_overrides.sql),
    dbt's own delete+insert here, one marker per incremental model while obs
    compiles its build plan (obs_plan_mode), with slots for the model's
    table (__obs_target__), its new rows (__obs_new__) and its columns
    (__obs_columns__). The executor takes each model's statements from here,
    so the rule is written once; outside plan mode this compiles to nothing.
    An analysis: dbt compiles it and never runs it. -#}
{%- if execute and obs_plan_mode() == 'full' -%}
    {%- for node in graph.nodes.values()
        if node.resource_type == 'model' and node.config.materialized == 'incremental'
        and node.config.unique_key -%}
        {%- set key = node.config.unique_key -%}
        {{ obs_plan_marker('replace', {
            'node': node.unique_id,
            'sql': delete_insert_sql(
                '__obs_target__', '__obs_new__',
                [key] if key is string else key, '__obs_columns__') | trim}) }}
    {% endfor -%}
{%- endif -%}
select 1 as obs_delete_insert
