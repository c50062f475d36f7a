{% macro list_of(items) %}
{#- A list value of the SQL expressions `items` (one type), in order. -#}
    {%- if items is string or items is not iterable or not items -%}
        {{ exceptions.raise_compiler_error("list_of: items is a non-empty list of SQL expressions") }}
    {%- endif -%}
    {{ return(adapter.dispatch('list_of', 'obs')(items)) }}
{% endmacro %}

{% macro default__list_of(items) %}
    array({{ items | join(', ') }})
{% endmacro %}

{% macro duckdb__list_of(items) %}
    [{{ items | join(', ') }}]
{% endmacro %}
