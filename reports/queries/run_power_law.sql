-- `obs analyze`: the run's power law fit, then its base model's.
with

run_fit as (
    select base_model_id
    from fct_power_law_fit
    where scope = 'run' and run_id = $run
)

select *  -- noqa: AM04
from fct_power_law_fit
where
    (scope = 'run' and run_id = $run)
    or (scope = 'base_model' and fit_id = (select run_fit.base_model_id from run_fit))
order by scope desc  -- noqa: AM06
