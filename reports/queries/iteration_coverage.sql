-- `obs follow`: the iterations each of $runs has landed (fct_iteration_summary).
select
    run_id,
    count(*) as iterations,
    min(iteration) as first_iteration,
    max(iteration) as last_iteration
from fct_iteration_summary
where list_contains($runs, run_id)
group by 1
order by 1
