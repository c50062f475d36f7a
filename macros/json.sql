{#- JSON: writing values and objects as JSON text, reading members and
    lists back, and walking a document's leaves. -#}

{% macro as_json(expression) %}
{#- A JSON document held as text (the lake's JSON columns), as the engine
    holds JSON: DuckDB's JSON type; text elsewhere (Spark reads JSON text with
    get_json_object and from_json). -#}
    {{ return(adapter.dispatch('as_json', 'obs')(expression)) }}
{% endmacro %}

{% macro default__as_json(expression) %}
    cast({{ expression }} as string)
{% endmacro %}

{% macro duckdb__as_json(expression) %}
    cast({{ expression }} as json)
{% endmacro %}

{% macro try_as_json(expression) %}
{#- A text that holds JSON, as the engine holds JSON (see as_json); null
    when it is not valid JSON. -#}
    {{ return(adapter.dispatch('try_as_json', 'obs')(expression)) }}
{% endmacro %}

{% macro default__try_as_json(expression) %}
    case when try_parse_json({{ expression }}) is not null then {{ expression }} end
{% endmacro %}

{% macro duckdb__try_as_json(expression) %}
    try_cast({{ expression }} as json)
{% endmacro %}

{% macro json_string(expression) %}
{#- A text as a JSON string (quoted, `"` and `\` escaped). Spark escapes no
    control character: for names such as metric keys. -#}
    {{ return(adapter.dispatch('json_string', 'obs')(expression)) }}
{% endmacro %}

{% macro default__json_string(expression) %}
    concat('"', replace(replace({{ expression }}, '\\', '\\\\'), '"', '\\"'), '"')
{% endmacro %}

{% macro duckdb__json_string(expression) %}
    to_json({{ expression }})
{% endmacro %}

{% macro json_object_of(members) %}
{#- A JSON object of `members`, a list of (name, SQL expression, type), as
    the engine holds JSON (see as_json), written as DuckDB writes it. The
    type says how Spark writes the value: bigint, double (yyjson's digits),
    bigint_list (a list of bigints), or json (a JSON value as it is); null is written null. -#}
    {%- for name, expression, type in members -%}
        {%- if type not in ('bigint', 'double', 'bigint_list', 'json') -%}
            {{ exceptions.raise_compiler_error("json_object_of: type bigint, double, bigint_list or json, got " ~ type) }}
        {%- endif -%}
    {%- endfor -%}
    {{ return(adapter.dispatch('json_object_of', 'obs')(members)) }}
{% endmacro %}

{% macro default__json_object_of(members) %}
    concat(
        '{',
        {%- for name, expression, type in members %}
        '{{ "," if not loop.first }}"{{ name }}":',
        coalesce(
            {%- if type == 'bigint' %}
            cast({{ expression }} as string),
            {%- elif type == 'double' %}
            {{ _json_double_text(expression) }},
            {%- elif type == 'bigint_list' %}
            concat('[', array_join({{ expression }}, ','), ']'),
            {%- else %}
            {{ expression }},
            {%- endif %}
            'null'
        ),
        {%- endfor %}
        '}'
    )
{% endmacro %}

{% macro duckdb__json_object_of(members) %}
    json_object(
        {%- for name, expression, type in members %}
        '{{ name }}', {{ expression }}{{ "," if not loop.last }}
        {%- endfor %}
    )
{% endmacro %}

{% macro json_merge(objects) %}
{#- JSON objects merged into one (DuckDB's JSON; text on Spark), their
    members in order: the objects' keys must be distinct (a later key would
    replace an earlier one on DuckDB, and repeat it on Spark). -#}
    {%- if objects is string or objects | length < 2 -%}
        {{ exceptions.raise_compiler_error("json_merge: objects is a list of two or more JSON objects") }}
    {%- endif -%}
    {{ return(adapter.dispatch('json_merge', 'obs')(objects)) }}
{% endmacro %}

{#- Spark: the objects' members, joined (concat_ws leaves out the empty
    objects, made null). -#}
{% macro default__json_merge(objects) %}
    concat('{', concat_ws(','
    {%- for object in objects %},
        element_at(transform(array({{ object }}), json_part ->
            nullif(substr(json_part, 2, length(json_part) - 2), '')), 1)
    {%- endfor %}
    ), '}')
{% endmacro %}

{#- DuckDB: json_merge_patch, from the first object on. -#}
{% macro duckdb__json_merge(objects) %}
    {%- set merged = namespace(sql=objects[0]) -%}
    {%- for object in objects[1:] -%}
        {%- set merged.sql = 'json_merge_patch(' ~ merged.sql ~ ', ' ~ object ~ ')' -%}
    {%- endfor -%}
    {{ merged.sql }}
{% endmacro %}

{% macro json_at(expression, index=none, name=none) %}
{#- An element of a JSON list (`index`: an SQL expression counting from 0)
    or a member of a JSON object (`name`: an SQL expression of its name),
    as text (json_text's); null when missing or not a list or object. -#}
    {%- if (index is none) == (name is none) -%}
        {{ exceptions.raise_compiler_error("json_at: index or name") }}
    {%- endif -%}
    {{ return(adapter.dispatch('json_at', 'obs')(expression, index, name)) }}
{% endmacro %}

{% macro default__json_at(expression, index, name) %}
    {%- if index is not none -%}
        get_json_object({{ expression }}, concat('$[', cast({{ index }} as string), ']'))
    {%- else -%}
        get_json_object({{ expression }}, concat('$[\'', {{ name }}, '\']'))
    {%- endif -%}
{% endmacro %}

{% macro duckdb__json_at(expression, index, name) %}
    {%- if index is not none -%}
        {{ expression }} ->> ({{ index }})
    {%- else -%}
        json_extract_string(
            {{ expression }},
            '$."' || {{ name }} || '"'
        )
    {%- endif -%}
{% endmacro %}

{% macro json_text(expression, key) %}
{#- The member `key` of a JSON object (JSON text, or DuckDB's JSON type) as
    text: a string's value, the JSON text of anything else; null when the
    member is missing. `key`: a member name (taken whole: `data.lr` is the
    member of that name, not a path; no quote or backslash in it), or a
    list of names, the path to a nested member. -#}
    {%- set names = [key] if key is string else key -%}
    {%- for name in names -%}
        {%- if not name is string or "'" in name or '"' in name or '\\' in name -%}
            {{ exceptions.raise_compiler_error("json_text: member names without quotes or backslashes, got " ~ key) }}
        {%- endif -%}
    {%- endfor -%}
    {{ return(adapter.dispatch('json_text', 'obs')(expression, key)) }}
{% endmacro %}

{% macro default__json_text(expression, key) %}
    {%- set names = [key] if key is string else key -%}
    get_json_object({{ expression }}, '$
    {%- for name in names -%}
        {%- if modules.re.fullmatch('\\w+', name) %}.{{ name }}{% else %}[\'{{ name }}\']{% endif -%}
    {%- endfor %}')
{% endmacro %}

{% macro duckdb__json_text(expression, key) %}
    {%- if key is string -%}
        ({{ expression }} ->> '{{ key }}')
    {%- else -%}
        json_extract_string({{ expression }}, '$.{{ key | join(".") }}')
    {%- endif -%}
{% endmacro %}

{% macro json_kind(expression) %}
{#- 'ARRAY' for a JSON list, 'OBJECT' for an object (JSON text, or DuckDB's
    JSON type); another name for the other JSON values (the engine's own),
    null for null. -#}
    {{ return(adapter.dispatch('json_kind', 'obs')(expression)) }}
{% endmacro %}

{% macro default__json_kind(expression) %}
    case
        when schema_of_variant(try_parse_json({{ expression }})) like 'ARRAY%' then 'ARRAY'
        when schema_of_variant(try_parse_json({{ expression }})) like 'OBJECT%' then 'OBJECT'
        else schema_of_variant(try_parse_json({{ expression }}))
    end
{% endmacro %}

{% macro duckdb__json_kind(expression) %}
    json_type({{ expression }})
{% endmacro %}

{% macro json_list_texts(json, key, field) %}
{#- A top-level key of a JSON object holding an array of objects: the text
    of each object's `field`, as a list; null when the key holds no array.
    Elements without the field: left out on DuckDB, null on Spark (count
    the non-null ones). -#}
    {{ return(adapter.dispatch('json_list_texts', 'obs')(json, key, field)) }}
{% endmacro %}

{#- Spark: from_json reads each element as its JSON text. -#}
{% macro default__json_list_texts(json, key, field) %}
    transform(
        from_json(get_json_object({{ json }}, '$.{{ key }}'), 'array<string>'),
        json_element -> get_json_object(json_element, '$.{{ field }}')
    )
{% endmacro %}

{% macro duckdb__json_list_texts(json, key, field) %}
    case
        when json_type({{ json }} -> '{{ key }}') = 'ARRAY'
            then json_extract_string({{ json }}, '$.{{ key }}[*].{{ field }}')
    end
{% endmacro %}

{% macro json_number_list(json, key) %}
{#- A top-level key of a JSON object holding an array of numbers, as a list
    of doubles; null when the key holds no array. -#}
    {{ return(adapter.dispatch('json_number_list', 'obs')(json, key)) }}
{% endmacro %}

{#- Spark: from_json gives null for a value that is no array. -#}
{% macro default__json_number_list(json, key) %}
    from_json(get_json_object({{ json }}, '$.{{ key }}'), 'array<double>')
{% endmacro %}

{% macro duckdb__json_number_list(json, key) %}
    case
        when json_type({{ json }} -> '{{ key }}') = 'ARRAY'
            then from_json({{ json }} -> '{{ key }}', '["DOUBLE"]')
    end
{% endmacro %}

{% macro json_number_map(key, value) %}
{#- Aggregate: a JSON object (DuckDB's JSON; text on Spark) of the group's
    keys (texts, distinct, without quotes or backslashes) and their numbers,
    keys in ascending order, the numbers as DuckDB's JSON writes doubles. -#}
    {{ return(adapter.dispatch('json_number_map', 'obs')(key, value)) }}
{% endmacro %}

{% macro default__json_number_map(key, value) %}
    concat('{', array_join(transform(
        array_sort(collect_list(named_struct('key', {{ key }}, 'value', {{ value }}))),
        json_member -> concat('"', json_member.key, '":', {{ _json_double_text('json_member.value') }})
    ), ','), '}')
{% endmacro %}

{% macro duckdb__json_number_map(key, value) %}
    to_json(map(list({{ key }} order by {{ key }}), list({{ value }} order by {{ key }})))
{% endmacro %}

{% macro json_leaves(relation, id_column, json_column) %}
    {{ return(adapter.dispatch('json_leaves', 'obs')(relation, id_column, json_column)) }}
{% endmacro %}

{#- A select of the scalar leaves of a JSON object column, one row per
    (id, key): key is the path of member names joined with `.`, a name that
    holds `.`, `"`, `[` or `]` quoted (`"optimizer.lr"` is not the nested
    `optimizer.lr`); value is the JSON text; text the value as text (a
    string's own text, the JSON text of anything else); type the JSON type
    (DuckDB's names, lower case). A list is one leaf (its JSON text): config
    lists such as target_modules read best whole. -#}
{#- Spark has no recursive CTE: the object is opened level by level
    (variant_explode of Spark's VARIANT), at most json_leaves_depth levels
    deep (a deeper member with members stops the build with raise_error
    rather than go missing). The text of each leaf is DuckDB's (yyjson's):
    numbers as their shortest round-trip digits, fixed from 1e-6 to below
    1e21 (`0.00001`, `100.0`), `1e-7` and `1e21` beyond; a non-negative
    integer is ubigint, a negative one bigint, any other number double. A
    list's text is rebuilt from its elements the same way; a list holding
    objects or lists has Spark's text for those elements (keys sorted,
    Java's number format), which may differ from DuckDB's. -#}
{% macro default__json_leaves(relation, id_column, json_column) %}
    {%- set depth = var('json_leaves_depth', 8) -%}
    {%- set levels = [] -%}
    {%- for level in range(1, depth + 1) -%}
        {%- if level == 1 -%}
            {%- set level_sql -%}
                select
                    source.{{ id_column }} as id_value,
                    {{ _json_key_path('member.key') }} as path,
                    member.value as node
                from {{ relation }} as source,
                    lateral variant_explode(try_parse_json(cast(source.{{ json_column }} as string)))
                        as member
                where member.key is not null
            {%- endset -%}
        {%- else -%}
            {%- set level_sql -%}
                select
                    up.id_value,
                    concat(up.path, '.', {{ _json_key_path('member.key') }}) as path,
                    member.value as node
                from ({{ levels[-1] }}) as up,
                    lateral variant_explode(up.node) as member
                where schema_of_variant(up.node) like 'OBJECT%' and member.key is not null
            {%- endset -%}
        {%- endif -%}
        {%- do levels.append(level_sql) -%}
    {%- endfor %}
    select
        id_value as {{ id_column }},
        path as key,
        {{ _variant_json_text('node') }} as value,
        case
            when schema_of_variant(node) = 'STRING' then variant_get(node, '$', 'string')
            else {{ _variant_json_text('node') }}
        end as text,
        {{ _variant_json_type('node') }} as type
    from (
        {%- for level_sql in levels %}
        {{ "union all" if not loop.first }}
        select *, {{ loop.index }} as level from ({{ level_sql }})
        {%- endfor %}
    )
    where
        case
            when schema_of_variant(node) not like 'OBJECT%' then true
            when level = {{ depth }} and to_json(node) <> '{}'
                then raise_error('json_leaves: an object deeper than {{ depth }} levels (var json_leaves_depth)')
            else false
        end
{% endmacro %}

{% macro _json_key_path(key) %}
{#- A member name as json_leaves writes it in a path (Spark): quoted when it
    holds `.`, `"`, `[` or `]`, with `"` escaped. -#}
    case
        when {{ key }} rlike '[."\\[\\]]'
            then concat('"', replace({{ key }}, '"', '\\"'), '"')
        else {{ key }}
    end
{%- endmacro %}

{% macro _variant_json_type(node) %}
{#- DuckDB's JSON type name (lower case) of a Spark VARIANT scalar or list. -#}
    case
        when schema_of_variant({{ node }}) like 'ARRAY%' then 'array'
        when schema_of_variant({{ node }}) like 'OBJECT%' then 'object'
        when schema_of_variant({{ node }}) = 'STRING' then 'varchar'
        when schema_of_variant({{ node }}) = 'BOOLEAN' then 'boolean'
        when schema_of_variant({{ node }}) = 'VOID' then 'null'
        when {{ _variant_is_integer(node) }}
            then case when try_variant_get({{ node }}, '$', 'decimal(20, 0)') >= 0 then 'ubigint' else 'bigint' end
        else 'double'
    end
{%- endmacro %}

{% macro _variant_is_integer(node) %}
{#- Whether a VARIANT number was written as an integer that DuckDB reads as
    one (a BIGINT, or a DECIMAL(p, 0) of 2^63 up to 2^64 - 1, its UBIGINT). -#}
    (schema_of_variant({{ node }}) in ('BIGINT', 'INT', 'SMALLINT', 'TINYINT')
        or (schema_of_variant({{ node }}) like 'DECIMAL(%,0)'
            and try_variant_get({{ node }}, '$', 'decimal(20, 0)') between 9223372036854775808 and 18446744073709551615))
{%- endmacro %}

{% macro _variant_json_text(node, elements=true) %}
{#- A VARIANT as DuckDB writes it in JSON (see default__json_leaves). -#}
    case
        when schema_of_variant({{ node }}) like 'ARRAY%'
        {%- if elements %}
            then concat('[', array_join(transform(
                variant_get({{ node }}, '$', 'array<variant>'),
                element -> coalesce({{ _variant_json_text('element', elements=false) }}, 'null')
            ), ','), ']')
        {%- else %}
            then to_json({{ node }})
        {%- endif %}
        when schema_of_variant({{ node }}) like 'OBJECT%' then to_json({{ node }})
        when {{ _variant_is_integer(node) }}
            then cast(try_variant_get({{ node }}, '$', 'decimal(20, 0)') as string)
        when schema_of_variant({{ node }}) like 'DECIMAL%'
            or schema_of_variant({{ node }}) in ('DOUBLE', 'FLOAT')
            then {{ _json_double_text("variant_get(" ~ node ~ ", '$', 'double')") }}
        else to_json({{ node }})
    end
{%- endmacro %}

{% macro _json_double_text(number) %}
{#- A double as yyjson (DuckDB's JSON) writes it: the shortest digits that
    read back as the number, fixed notation from 1e-6 to below 1e21 (with
    `.0` when whole), `d.ddde-7` / `1e21` beyond, NaN, Infinity and
    -Infinity as DuckDB writes them. -#}
    {{- _spark_number_text(number, 'NaN', 'Infinity', -6, 21, '', 1) -}}
{%- endmacro %}

{% macro duckdb__json_leaves(relation, id_column, json_column) %}
    with recursive tree as (
        select
            source.{{ id_column }} as id_value,
            node.id,
            node.parent,
            node.key,
            node.value,
            node.type
        from {{ relation }} as source,
            json_tree(source.{{ json_column }}) as node
    ),

    named as (
        select id_value, id, type, value, '' as path, false as in_list
        from tree
        where parent is null

        union all

        select
            child.id_value,
            child.id,
            child.type,
            child.value,
            (case when up.path = '' then '' else up.path || '.' end)
            || case
                when regexp_matches(child.key, '[."\[\]]')
                    then '"' || replace(child.key, '"', '\"') || '"'
                else child.key
            end,
            up.in_list or up.type = 'ARRAY'
        from tree as child
        inner join named as up
            on child.id_value = up.id_value
            and child.parent = up.id
    )

    select
        id_value as {{ id_column }},
        path as key,
        value,
        case when lower(type) = 'varchar' then value ->> '$' else value::varchar end as text,
        lower(type) as type
    from named
    where path <> '' and type <> 'OBJECT' and not in_list
{% endmacro %}

{% macro _spark_number_text(expression, nan, infinity, plain_from, plain_below, plus, exponent_digits) %}
{#- Spark: a double's shortest round-trip digits, laid out plain for a
    decimal exponent in [plain_from, plain_below), else as d.ddd e <sign>
    <exponent> (`plus` before a positive exponent, at least
    `exponent_digits` digits); `nan` and `infinity` name the non-finite
    values. The digits: the first of Java's %.{p}e forms, p from 0 to 16,
    that reads back as the same double. Each value is bound once (a one
    element array's transform), so the expression is written out once. -#}
    element_at(transform(array(cast({{ expression }} as double)), number_value ->
        case
            when number_value is null then cast(null as string)
            when isnan(number_value) then '{{ nan }}'
            when number_value = double('infinity') then '{{ infinity }}'
            when number_value = double('-infinity') then '-{{ infinity }}'
            else element_at(transform(array(
                case
                {%- for places in range(16) %}
                    when cast(format_string('%.{{ places }}e', number_value) as double) = number_value
                        then format_string('%.{{ places }}e', number_value)
                {%- endfor %}
                    else format_string('%.16e', number_value)
                end
            ), number_scientific -> element_at(transform(array(named_struct(
                'sign', case when number_scientific like '-%' then '-' else '' end,
                'digits', regexp_replace(
                    replace(regexp_extract(number_scientific, '([0-9.]+)e', 1), '.', ''), '0+$', ''
                ),
                'exponent', cast(regexp_extract(number_scientific, 'e([-+][0-9]+)', 1) as int)
            )), number_parts -> number_parts.sign || case
                when number_parts.digits = '' then '0.0'
                when number_parts.exponent >= {{ plain_from }} and number_parts.exponent < 0
                    then '0.' || repeat('0', -number_parts.exponent - 1) || number_parts.digits
                when number_parts.exponent >= 0 and number_parts.exponent < {{ plain_below }}
                    then case
                        when length(number_parts.digits) <= number_parts.exponent + 1
                            then number_parts.digits
                            || repeat('0', number_parts.exponent + 1 - length(number_parts.digits))
                            || '.0'
                        else substr(number_parts.digits, 1, number_parts.exponent + 1) || '.'
                            || substr(number_parts.digits, number_parts.exponent + 2)
                    end
                else substr(number_parts.digits, 1, 1)
                    || case
                        when length(number_parts.digits) > 1
                            then '.' || substr(number_parts.digits, 2)
                        else ''
                    end
                    || 'e' || case when number_parts.exponent < 0 then '-' else '{{ plus }}' end
                    {#- lpad cuts a longer text to the length: at least the digits -#}
                    || lpad(
                        cast(abs(number_parts.exponent) as string),
                        greatest(length(cast(abs(number_parts.exponent) as string)), {{ exponent_digits }}),
                        '0'
                    )
            end), 1)), 1)
        end), 1)
{%- endmacro %}
