{#- Time: timestamps from epoch seconds and intervals of seconds. -#}

{% macro epoch_timestamp(seconds) %}
{#- The UTC time `seconds` (a double) after the Unix epoch, as a timestamp
    without time zone. -#}
    {{ return(adapter.dispatch('epoch_timestamp', 'obs')(seconds)) }}
{% endmacro %}

{#- Spark: microseconds, as DuckDB's to_timestamp keeps them. -#}
{% macro default__epoch_timestamp(seconds) %}
    cast(timestamp_micros(cast(round({{ seconds }} * 1000000) as bigint)) as timestamp_ntz)
{% endmacro %}

{% macro duckdb__epoch_timestamp(seconds) %}
    cast(to_timestamp({{ seconds }}) as timestamp)
{% endmacro %}

{% macro interval_seconds(seconds) %}
{#- An interval of `seconds` (an integer), to add to or subtract from a
    timestamp. -#}
    {{ return(adapter.dispatch('interval_seconds', 'obs')(seconds)) }}
{% endmacro %}

{% macro default__interval_seconds(seconds) %}
    make_dt_interval(0, 0, 0, {{ seconds }})
{% endmacro %}

{% macro duckdb__interval_seconds(seconds) %}
    to_seconds({{ seconds }})
{% endmacro %}
