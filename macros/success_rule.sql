{% macro success_rule() %}
{#- The build's one definition of a rollout's success, from var `success`,
    as a mapping {kind, function, threshold, text}:
    - `strict`: the seed's, every instruction followed (the rollout's own
      prompt_strict_acc; a rollout without that flag passes at
      var pass_threshold);
    - `score >= X`: the rollout's score reaches X;
    - `<reward function> >= X`: that function's own value for the rollout
      (its rewards map) reaches X; a rollout without the function fails;
    - `auto` (the default, var unset): `strict` where the dumps carry
      instruction flags, else `score >= pass_threshold`, per rollout, which
      is what `strict` does too; only the text differs.
    The var is a string as above, or the mapping `obs build --success`
    passes ({kind: function, function: check_answer, threshold: 3}). It is
    a parameter, never SQL: the function's name must be a plain name and
    the threshold a finite number, else the build stops with one line. -#}
    {%- set given = var('success', 'auto') -%}
    {%- set name_pattern = '^[A-Za-z_][A-Za-z0-9_.:/-]{0,127}$' -%}
    {%- set usage = "var success: expected strict, auto, 'score >= X' or"
        ~ " '<reward function> >= X' (e.g. 'check_answer >= 3'), got " -%}
    {%- if given is none -%}
        {%- set given = 'auto' -%}
    {%- endif -%}
    {%- if given is mapping -%}
        {%- set kind = given.get('kind') -%}
        {%- set function = given.get('function') -%}
        {%- set threshold = given.get('threshold') -%}
    {%- elif given is string -%}
        {%- set text = given | trim -%}
        {%- if text in ('strict', 'auto') -%}
            {%- set kind = text -%}
            {%- set function = none -%}
            {%- set threshold = none -%}
        {%- else -%}
            {%- set found = modules.re.match(
                '^([A-Za-z_][A-Za-z0-9_.:/-]*)\\s*>=\\s*(\\S+)$', text
            ) -%}
            {%- if not found -%}
                {{ exceptions.raise_compiler_error(usage ~ "'" ~ given ~ "'") }}
            {%- endif -%}
            {%- set function = found.group(1) -%}
            {%- set threshold = found.group(2) -%}
            {%- set kind = 'score' if function == 'score' else 'function' -%}
            {%- if kind == 'score' -%}
                {%- set function = none -%}
            {%- endif -%}
        {%- endif -%}
    {%- else -%}
        {{ exceptions.raise_compiler_error(usage ~ given) }}
    {%- endif -%}
    {%- if kind not in ('strict', 'auto', 'score', 'function') -%}
        {{ exceptions.raise_compiler_error(usage ~ given) }}
    {%- endif -%}
    {%- if kind in ('strict', 'auto') -%}
        {{ return({'kind': kind, 'function': none, 'threshold': none, 'text': kind}) }}
    {%- endif -%}
    {%- if kind == 'function' and (
        function is not string or not modules.re.match(name_pattern, function)
    ) -%}
        {{ exceptions.raise_compiler_error(
            "var success: the reward function's name must be a plain name"
            ~ " (letters, digits, _ . : / -), got " ~ function
        ) }}
    {%- endif -%}
    {%- set number_text = threshold | string | trim -%}
    {%- if not modules.re.match(
        '^[+-]?([0-9]+([.][0-9]*)?|[.][0-9]+)([eE][+-]?[0-9]+)?$', number_text
    ) -%}
        {{ exceptions.raise_compiler_error(
            "var success: the threshold must be a finite number, got " ~ threshold
        ) }}
    {%- endif -%}
    {%- set value = number_text | float -%}
    {#- shown as written by a person: 5, not 5.0 -#}
    {%- set shown = (value | int | string)
        if value == (value | int) and value | abs < 1e15 else (value | string) -%}
    {%- set label = 'score' if kind == 'score' else function -%}
    {{ return({
        'kind': kind,
        'function': function if kind == 'function' else none,
        'threshold': value,
        'text': label ~ ' >= ' ~ shown,
    }) }}
{% endmacro %}
