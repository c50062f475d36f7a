-- `obs audit`: one row per logged key of the run: how its steps went against
-- the rollouts (fct_metric_audit), the worst one, the convention that matched.
select
    metric,
    any_value(canonical_metric) as canonical_metric,
    count(*) as steps,
    count(*) filter (where verdict = 'agrees') as agrees,
    count(*) filter (where verdict = 'disagrees') as disagrees,
    count(*) filter (where verdict = 'not_comparable') as not_comparable,
    arg_max(step, difference) filter (
        where difference is not null
    ) as worst_step,
    max(difference) as worst_difference,
    list(step order by step) filter (
        where verdict = 'disagrees'
    ) as disagreeing_steps,
    mode(convention) filter (where verdict = 'agrees') as agreeing_convention,
    mode(convention) as any_convention
from fct_metric_audit
where run_id = $run
group by 1
order by 1
