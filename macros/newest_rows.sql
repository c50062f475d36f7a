{% macro newest_rows(relation, partition_by, newest_by, keep_ties=false) %}
{#- A select of the newest row of each group of `relation` (a CTE name):
    groups by the `partition_by` columns, newest by the `newest_by` columns
    (largest first, in order). keep_ties: every row that ties with the newest
    on all of `newest_by` (a part landed again is read whole), else one of
    them. -#}
    {%- if not partition_by or not newest_by -%}
        {{ exceptions.raise_compiler_error("newest_rows: partition_by and newest_by are lists of columns") }}
    {%- endif -%}
    {{ return(adapter.dispatch('newest_rows', 'obs')(relation, partition_by, newest_by, keep_ties)) }}
{% endmacro %}

{#- Without QUALIFY (Spark 4.0): keep_ties joins each row with its group's
    largest `newest_by` (a struct compares field by field); else max_by
    takes the whole row at it. -#}
{% macro default__newest_rows(relation, partition_by, newest_by, keep_ties) %}
    {%- if keep_ties %}
    select {{ relation }}.*
    from {{ relation }}
    inner join (
        select
            {%- for column in partition_by %}
            {{ column }},
            {%- endfor %}
            max(struct({{ newest_by | join(', ') }})) as newest_key
        from {{ relation }}
        group by {{ partition_by | join(', ') }}
    ) as newest_keys
        on
        {%- for column in partition_by %}
            {{ relation }}.{{ column }} <=> newest_keys.{{ column }} and
        {%- endfor %}
            struct({{ relation }}.{{ newest_by | join(', ' ~ relation ~ '.') }})
            = newest_keys.newest_key
    {%- else %}
    select newest_row.*
    from (
        select max_by(struct(*), struct({{ newest_by | join(', ') }})) as newest_row
        from {{ relation }}
        group by {{ partition_by | join(', ') }}
    )
    {%- endif %}
{% endmacro %}

{% macro duckdb__newest_rows(relation, partition_by, newest_by, keep_ties) %}
    select *
    from {{ relation }}
    qualify {{ 'dense_rank' if keep_ties else 'row_number' }}() over (
        partition by {{ partition_by | join(', ') }}
        order by {{ newest_by | join(' desc, ') }} desc
    ) = 1
{% endmacro %}
