{% macro lake_time(column) %}
{#- A part's publish time from its `ingested_at=<t>` folder name: the lake's
    layout writes t as UTC to the microsecond in this format (obs.core.lake_layout
    holds the same format; a test keeps the two equal). A timestamp without
    time zone. -#}
    {{ return(adapter.dispatch('lake_time', 'obs')(column)) }}
{% endmacro %}

{#- Spark: the same format in Java's letters. -#}
{% macro default__lake_time(column) %}
    to_timestamp_ntz({{ column }}, "yyyyMMdd'T'HHmmssSSSSSS'Z'")
{%- endmacro %}

{% macro duckdb__lake_time(column) %}
    strptime({{ column }}, '%Y%m%dT%H%M%S%fZ')
{%- endmacro %}
