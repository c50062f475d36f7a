{#- Lists: building, reading, filtering and folding them, and the
    aggregates that collect a group's rows into a list. -#}

{% macro empty_list(element_type) %}
{#- An empty list of `element_type` (DuckDB's type name, as the lake sources
    declare them: varchar, double, ...). -#}
    {{ return(adapter.dispatch('empty_list', 'obs')(element_type)) }}
{% endmacro %}

{% macro default__empty_list(element_type) %}
    cast(array() as array<{{ spark_column_type(element_type) }}>)
{% endmacro %}

{% macro duckdb__empty_list(element_type) %}
    []::{{ element_type }}[]
{% endmacro %}

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

{% macro key_value_list(pairs) %}
{#- A list of {key, value} structs, one per (key, value) pair of SQL
    expressions, in order: a finding's measures. -#}
    {%- if pairs is string or not pairs -%}
        {{ exceptions.raise_compiler_error("key_value_list: pairs is a list of (key, value) SQL expressions") }}
    {%- endif -%}
    {{ return(adapter.dispatch('key_value_list', 'obs')(pairs)) }}
{% endmacro %}

{% macro default__key_value_list(pairs) %}
    array(
    {%- for key, value in pairs %}
        named_struct('key', {{ key }}, 'value', {{ value }}){{ ',' if not loop.last }}
    {%- endfor %}
    )
{% endmacro %}

{% macro duckdb__key_value_list(pairs) %}
    [
    {%- for key, value in pairs %}
        { 'key': {{ key }}, 'value': {{ value }} }{{ ',' if not loop.last }}
    {%- endfor %}
    ]
{% endmacro %}

{% macro list_element(expression, position) %}
{#- The element of a list at a position counted from 1; null past its end
    or for a null list. -#}
    {{ return(adapter.dispatch('list_element', 'obs')(expression, position)) }}
{% endmacro %}

{#- Spark: element_at counts from 1 (outside ANSI mode, null past the end). -#}
{% macro default__list_element(expression, position) %}
    element_at({{ expression }}, {{ position }})
{% endmacro %}

{% macro duckdb__list_element(expression, position) %}
    {{ expression }}[{{ position }}]
{% endmacro %}

{% macro list_size(expression) %}
{#- The number of elements of a list; 0 for a null list. -#}
    {{ return(adapter.dispatch('list_size', 'obs')(expression)) }}
{% endmacro %}

{#- Spark: size(null) is -1 outside ANSI mode. -#}
{% macro default__list_size(expression) %}
    coalesce(case when {{ expression }} is not null then size({{ expression }}) end, 0)
{% endmacro %}

{% macro duckdb__list_size(expression) %}
    len(coalesce({{ expression }}, []))
{% endmacro %}

{% macro list_indexes(expression) %}
{#- The list of a non-empty list's positions, 1 to its size, in order: a
    list to map over when the elements of several aligned lists are read
    together (list_element of each at the position). Callers guard the
    empty and the null list. -#}
    {{ return(adapter.dispatch('list_indexes', 'obs')(expression)) }}
{% endmacro %}

{#- Spark: sequence(1, 0) would count down; the caller's guard keeps it out. -#}
{% macro default__list_indexes(expression) %}
    sequence(1, size({{ expression }}))
{% endmacro %}

{% macro duckdb__list_indexes(expression) %}
    range(1, len({{ expression }}) + 1)
{% endmacro %}

{% macro list_positions(expression) %}
{#- A select-list item that makes one row per element of a list, holding
    the element's position from 1 (a row whose list is null or empty makes
    none). Read the element with list_element. -#}
    {{ return(adapter.dispatch('list_positions', 'obs')(expression)) }}
{% endmacro %}

{#- Spark: sequence(1, 0) counts down, and size(null) is -1: an empty or
    null list explodes a null, which makes no row. -#}
{% macro default__list_positions(expression) %}
    explode(case when size({{ expression }}) > 0 then sequence(1, size({{ expression }})) end)
{% endmacro %}

{% macro duckdb__list_positions(expression) %}
    unnest(range(1, len({{ expression }}) + 1))
{% endmacro %}

{% macro explode_list(expression) %}
{#- A select-list item that makes one row per element of a list, holding
    the element (a row whose list is null or empty makes none). -#}
    {{ return(adapter.dispatch('explode_list', 'obs')(expression)) }}
{% endmacro %}

{% macro default__explode_list(expression) %}
    explode({{ expression }})
{% endmacro %}

{% macro duckdb__explode_list(expression) %}
    unnest({{ expression }})
{% endmacro %}

{% macro list_contains(expression, value) %}
{#- Whether a list holds a value (null for a null list). -#}
    {{ return(adapter.dispatch('list_contains', 'obs')(expression, value)) }}
{% endmacro %}

{% macro default__list_contains(expression, value) %}
    array_contains({{ expression }}, {{ value }})
{% endmacro %}

{% macro duckdb__list_contains(expression, value) %}
    list_contains({{ expression }}, {{ value }})
{% endmacro %}

{% macro list_distinct(list) %}
{#- The distinct non-null elements of a list (in no particular order). -#}
    {{ return(adapter.dispatch('list_distinct', 'obs')(list)) }}
{% endmacro %}

{% macro default__list_distinct(list) %}
    filter(array_distinct({{ list }}), distinct_element -> distinct_element is not null)
{% endmacro %}

{% macro duckdb__list_distinct(list) %}
    list_distinct({{ list }})
{% endmacro %}

{% macro list_where(list, element, condition) %}
{#- The elements of `list` (named `element` in `condition`) for which
    `condition` holds, in order. -#}
    {{ return(adapter.dispatch('list_where', 'obs')(list, element, condition)) }}
{% endmacro %}

{% macro default__list_where(list, element, condition) %}
    filter({{ list }}, {{ element }} -> {{ condition }})
{% endmacro %}

{% macro duckdb__list_where(list, element, condition) %}
    list_filter({{ list }}, {{ element }} -> {{ condition }})
{% endmacro %}

{% macro list_map(list, element, body) %}
{#- The list of `body` evaluated for each element of `list` (named `element`
    in `body`), in order. -#}
    {{ return(adapter.dispatch('list_map', 'obs')(list, element, body)) }}
{% endmacro %}

{% macro default__list_map(list, element, body) %}
    transform({{ list }}, {{ element }} -> {{ body }})
{% endmacro %}

{% macro duckdb__list_map(list, element, body) %}
    list_transform({{ list }}, {{ element }} -> {{ body }})
{% endmacro %}

{% macro list_fold(list, accumulated, element, body) %}
{#- Folds a non-empty list from its first element, left to right: the
    first element, then `body` (of `accumulated`, the value so far, and
    `element`, the next one; the same type as the elements) for each next
    element. Summing with `a + b` adds in the list's order, so both engines
    give the same bits. Callers guard the empty list. -#}
    {{ return(adapter.dispatch('list_fold', 'obs')(list, accumulated, element, body)) }}
{% endmacro %}

{% macro default__list_fold(list, accumulated, element, body) %}
    aggregate(
        slice({{ list }}, 2, greatest(size({{ list }}), 1)),
        element_at({{ list }}, 1),
        ({{ accumulated }}, {{ element }}) -> {{ body }}
    )
{% endmacro %}

{% macro duckdb__list_fold(list, accumulated, element, body) %}
    list_reduce({{ list }}, ({{ accumulated }}, {{ element }}) -> {{ body }})
{% endmacro %}

{% macro list_total(list) %}
{#- The sum of a non-empty list of doubles (callers guard the empty list):
    DuckDB's list_sum, one vectorised call; elsewhere a fold. -#}
    {{ return(adapter.dispatch('list_total', 'obs')(list)) }}
{% endmacro %}

{% macro default__list_total(list) %}
    {{ list_fold(list, 'total_a', 'total_b', 'total_a + total_b') }}
{% endmacro %}

{% macro duckdb__list_total(list) %}
    list_sum({{ list }})
{% endmacro %}

{% macro repeat_fold(times, start, state, body) %}
{#- A loop in one expression: `start`, then `body` (of `state`, the value
    so far; the same type) applied `times` times (a number). -#}
    {%- if times is not number or times < 1 -%}
        {{ exceptions.raise_compiler_error("repeat_fold: times is a number from 1") }}
    {%- endif -%}
    {{ return(adapter.dispatch('repeat_fold', 'obs')(times, start, state, body)) }}
{% endmacro %}

{% macro default__repeat_fold(times, start, state, body) %}
    aggregate(sequence(1, {{ times }}), {{ start }}, ({{ state }}, repeat_step) -> {{ body }})
{% endmacro %}

{#- DuckDB's list_reduce folds a list of the start's type: the start, then
    `times` nulls of its type (list_resize pads with nulls), so the start is
    computed once and the padding costs nothing. -#}
{% macro duckdb__repeat_fold(times, start, state, body) %}
    list_reduce(
        list_resize([{{ start }}], {{ times }} + 1),
        ({{ state }}, repeat_step) -> {{ body }}
    )
{% endmacro %}

{% macro list_join(expression, separator) %}
{#- The elements of a list as text, joined by `separator` (SQL text). -#}
    {{ return(adapter.dispatch('list_join', 'obs')(expression, separator)) }}
{% endmacro %}

{% macro default__list_join(expression, separator) %}
    array_join({{ expression }}, {{ separator }})
{% endmacro %}

{% macro duckdb__list_join(expression, separator) %}
    array_to_string({{ expression }}, {{ separator }})
{% endmacro %}

{% macro ordered_list(value, order_by, filter=none) %}
{#- Aggregate: the values as a list in the order of the `order_by` columns
    (a list of SQL expressions, ascending; ties by the value on Spark), of
    the rows `filter` (an SQL condition) keeps when given. With no such row
    DuckDB gives null and Spark an empty list: coalesce the two alike. -#}
    {{ return(adapter.dispatch('ordered_list', 'obs')(value, order_by, filter)) }}
{% endmacro %}

{% macro default__ordered_list(value, order_by, filter=none) %}
    transform(
        array_sort(collect_list(named_struct(
            {%- for expression in order_by %}
            'order_{{ loop.index }}', {{ expression }},
            {%- endfor %}
            'value', {{ value }}
        )){% if filter is not none %} filter (where {{ filter }}){% endif %}),
        ordered -> ordered.value
    )
{% endmacro %}

{% macro duckdb__ordered_list(value, order_by, filter=none) %}
    list({{ value }} order by {{ order_by | join(', ') }})
    {%- if filter is not none %} filter (where {{ filter }}){% endif %}
{% endmacro %}

{% macro ordered_string_agg(value, separator, order_by) %}
{#- Aggregate: the non-null texts joined by `separator` (SQL text) in the
    order of the `order_by` columns (a list of SQL expressions, ascending). -#}
    {{ return(adapter.dispatch('ordered_string_agg', 'obs')(value, separator, order_by)) }}
{% endmacro %}

{% macro default__ordered_string_agg(value, separator, order_by) %}
    array_join({{ ordered_list(value, order_by) }}, {{ separator }})
{% endmacro %}

{% macro duckdb__ordered_string_agg(value, separator, order_by) %}
    string_agg({{ value }}, {{ separator }} order by {{ order_by | join(', ') }})
{% endmacro %}

{% macro sorted_distinct_list(expression) %}
{#- Aggregate: the distinct non-null values, as a list in ascending order. -#}
    {{ return(adapter.dispatch('sorted_distinct_list', 'obs')(expression)) }}
{% endmacro %}

{% macro default__sorted_distinct_list(expression) %}
    array_sort(collect_set({{ expression }}))
{% endmacro %}

{% macro duckdb__sorted_distinct_list(expression) %}
    list(distinct {{ expression }} order by {{ expression }})
{% endmacro %}
