-- The run report: the metrics on whose panels each finding signal is shaded,
-- as each rule's yml entry declares them (a null metric: a signal that shades
-- no panel).
select
    signal,
    metric
from rpt_finding_shades
order by 1, 2
