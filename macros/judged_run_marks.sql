{% macro judged_run_marks(columns, judged_runs='judged_runs') %}
{#- The findings models' marks of how far each run was judged: a select of
    one row per run of `judged_runs` (run_id, run_parts) with the model's
    other `columns` null, in the model's column order (run_id first,
    run_parts last), to union (by position) under its rows. -#}
    {%- if columns is string -%}
        {{ exceptions.raise_compiler_error("judged_run_marks: columns is a list of column names") }}
    {%- endif -%}
    select
        run_id,
        {%- for column in columns %}
        null as {{ column }},
        {%- endfor %}
        run_parts
    from {{ judged_runs }}
{%- endmacro %}
