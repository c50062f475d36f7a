{% macro lake_time(column) %}
{#- A part's publish time from its `ingested_at=<t>` folder name: the lake's
    layout writes t as UTC to the microsecond in this format (obs.core.lake_layout
    holds the same format; a test keeps the two equal). -#}
    strptime({{ column }}, '%Y%m%dT%H%M%S%fZ')
{%- endmacro %}
