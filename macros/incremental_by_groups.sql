{% macro changed_rows(upstream, grain=['run_id', 'iteration'], upstream_time='ingested_at', own_time='ingested_through', lookup=none) %}
{#- Every row of `upstream` in a group (by `grain`) that received rows this
    model has not counted yet, when the model builds incrementally; every row
    otherwise. A run's watermark is the newest `own_time` this model holds
    for it; groups with rows published after it, or in the look-back window
    before it (a part published while the last build listed the lake), are
    recomputed whole, which is idempotent. A run the model does not hold yet
    is read whole. The groups are looked up first (in `lookup`, default
    `upstream`: a relation with the same grain and `upstream_time` columns
    that is cheaper to filter by time, such as the lake's view) and written
    into the query as constants, so DuckDB skips unchanged lake parts and
    row groups unread. -#}
select upstream.*
from {{ upstream }} as upstream
{%- if is_incremental() %}
where {{ changed_groups_predicate(lookup or upstream, grain, upstream_time, own_time) }}
{%- endif %}
{% endmacro %}

{% macro _quoted(value) -%}
'{{ value | replace("'", "''") }}'
{%- endmacro %}

{% macro changed_groups_predicate(lookup, grain, upstream_time, own_time) %}
{%- if not execute -%}
    true
{%- else -%}
    {{ groups_predicate(changed_groups(lookup, grain, upstream_time, own_time), grain) }}
{%- endif -%}
{% endmacro %}

{% macro changed_groups(lookup, grain, upstream_time='ingested_at', own_time='ingested_through') %}
{#- The groups (by `grain`: [run_id] or [run_id, <integer column>]) of
    `lookup` that received rows this model has not counted yet, as a dict
    run -> list of the second grain column's values (a list of none for
    grain [run_id]); see changed_rows. Empty outside execution. -#}
{%- if grain[0] != 'run_id' or grain | length > 2 -%}
    {{ exceptions.raise_compiler_error("changed_rows: grain is [run_id] or [run_id, <integer column>]") }}
{%- endif -%}
{%- set by_run = {} -%}
{%- if obs_plan_mode() -%}
    {#- obs's executor looks the groups up when it runs the model: see
        obs_plan_mode. -#}
    {{ return({'__obs_plan__': [{
        'lookup': lookup | string, 'grain': grain,
        'upstream_time': upstream_time, 'own_time': own_time}]}) }}
{%- elif execute -%}
    {#- 1. each run's watermark, less the look-back window -#}
    {%- set held = run_query(
        "select run_id, cast(max(" ~ own_time ~ ") - "
        ~ interval_seconds(var('incremental_lookback_seconds')) ~ " as string) from " ~ this
        ~ " group by 1 order by 1"
    ) -%}
    {#- 2. the groups with rows after it (a run not held yet: all of it), as
        constants on the publish time so only new parts are read -#}
    {%- set recent = [] -%}
    {%- for row in held.rows -%}
        {%- do recent.append(
            "(run_id = " ~ _quoted(row[0]) ~ " and " ~ upstream_time
            ~ " > timestamp '" ~ row[1] ~ "')"
        ) -%}
    {%- endfor -%}
    {%- if held.rows | length -%}
        {%- set known = [] -%}
        {%- for row in held.rows %}{% do known.append(_quoted(row[0])) %}{% endfor -%}
        {%- do recent.append("run_id not in (" ~ known | join(", ") ~ ")") -%}
    {%- else -%}
        {%- do recent.append("true") -%}
    {%- endif -%}
    {%- set changed = run_query(
        "select distinct " ~ grain | join(", ") ~ " from " ~ lookup
        ~ " where " ~ recent | join(" or ") ~ " order by " ~ range(1, grain | length + 1) | join(", ")
    ) -%}
    {%- for row in changed.rows -%}
        {%- do by_run.setdefault(row[0], []).append(row[1] if grain | length > 1 else none) -%}
    {%- endfor -%}
{%- endif -%}
{{ return(by_run) }}
{% endmacro %}

{% macro merge_groups(first, second) %}
{#- The union of two results of changed_groups (same grain). -#}
{%- if '__obs_plan__' in first or '__obs_plan__' in second -%}
    {{ return({'__obs_plan__': first.get('__obs_plan__', []) + second.get('__obs_plan__', [])}) }}
{%- endif -%}
{%- set merged = {} -%}
{%- for by_run in [first, second] -%}
    {%- for run, values in by_run.items() -%}
        {%- for value in values -%}
            {%- if value not in merged.setdefault(run, []) %}{% do merged[run].append(value) %}{% endif -%}
        {%- endfor -%}
    {%- endfor -%}
{%- endfor -%}
{{ return(merged) }}
{% endmacro %}

{% macro groups_predicate(by_run, grain, alias='upstream') %}
{#- A predicate on `alias`'s columns named by `grain` that holds for the
    groups of `by_run` (a result of changed_groups); false when it is empty. -#}
{%- if '__obs_plan__' in by_run -%}
    {{ obs_plan_marker('groups', {'specs': by_run['__obs_plan__'], 'grain': grain, 'alias': alias}) }}
{%- elif not by_run -%}
    false
{%- else -%}
    (
    {%- for run, values in by_run.items() %}
        {{ "or " if not loop.first }}({{ alias }}.{{ grain[0] }} = {{ _quoted(run) }}
        {%- if grain | length > 1 %} and {{ alias }}.{{ grain[1] }} in ({{ values | join(", ") }}){% endif %})
    {%- endfor %}
    )
{%- endif -%}
{% endmacro %}
