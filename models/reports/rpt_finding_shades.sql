{# What each finding signal is evidence about, for the run report's charts:
   the metrics (named as the charts name their series) on whose panels it
   shades a finding, as the rules' yml entries declare them (meta `shades`,
   signal: [metric, ...]; macro finding_rules_meta). A signal declared with
   no metric (the power-law fit, on its own log-log axes) has one row with
   a null metric: it shades no panel. #}
{%- set shades = [] -%}
{%- for signal, metrics in finding_rules_meta('shades') | dictsort -%}
    {%- for metric in metrics or [none] -%}
        {%- do shades.append((signal, "'" ~ metric ~ "'" if metric else 'null')) -%}
    {%- endfor -%}
{%- endfor %}
select
    shades.signal,
    shades.metric
from (
    values
    {%- for signal, metric in shades %}
        ('{{ signal }}', {{ metric }}){{ "," if not loop.last }}
    {%- endfor %}
) as shades (signal, metric)
