{% macro struct_from(fields) %}
{#- A struct value from `fields`, a dict of field name to SQL expression
    (fields in the dict's order). -#}
    {%- if fields is not mapping or not fields -%}
        {{ exceptions.raise_compiler_error("struct_from: fields is a dict of name to SQL") }}
    {%- endif -%}
    {{ return(adapter.dispatch('struct_from', 'obs')(fields)) }}
{% endmacro %}

{% macro default__struct_from(fields) %}
    named_struct(
    {%- for name, expression in fields.items() -%}
        '{{ name }}', {{ expression }}{{ ", " if not loop.last }}
    {%- endfor -%}
    )
{% endmacro %}

{% macro duckdb__struct_from(fields) %}
    {
    {%- for name, expression in fields.items() -%}
        '{{ name }}': {{ expression }}{{ ", " if not loop.last }}
    {%- endfor -%}
    }
{% endmacro %}
