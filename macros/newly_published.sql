{% macro newly_published(upstream_time, own_time) %}
{#- A predicate on `upstream_time` that holds for the rows published since
    this model last read the lake, when it builds incrementally: in a dbt
    run, after its newest `own_time` less the look-back window
    (incremental_lookback_seconds); in obs's executor, from the oldest lake
    part published since the listing its last build started from (exact; see
    obs_plan_mode). `true` when the model holds no rows. -#}
    {%- if obs_plan_mode() -%}
        {{ obs_plan_marker('since', {'time': upstream_time}) }}
    {%- elif execute -%}
        {%- set watermark = run_query(
            "select cast(max(" ~ own_time ~ ") - "
            ~ interval_seconds(var('incremental_lookback_seconds')) ~ " as string) from " ~ this
        ).columns[0].values()[0] -%}
        {%- if watermark is none -%}
            true
        {%- else -%}
            {{ upstream_time }} > timestamp '{{ watermark }}'
        {%- endif -%}
    {%- else -%}
        true
    {%- endif -%}
{% endmacro %}
