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
