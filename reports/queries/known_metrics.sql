-- The command line: which of $names name metrics (as logged or canonical).
select distinct
    metric,
    canonical_metric
from fct_metric_summary
where list_contains($names, metric) or list_contains($names, canonical_metric)
