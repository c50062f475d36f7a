-- `obs export buckets`: the run's iteration over all its prompts (summary.json).
select
    sum(mean_score * n_samples) / sum(n_samples) as mean_reward,
    sum(pass_rate * n_samples) / sum(n_samples) as pass_rate,
    avg(mean_at_1) as "mean@1",  -- noqa: RF05
    avg(mean_at_3) as "mean@3",  -- noqa: RF05
    avg(mean_at_5) as "mean@5",  -- noqa: RF05
    avg(mean_at_10) as "mean@10",  -- noqa: RF05
    avg(mean_at_20) as "mean@20",  -- noqa: RF05
    avg(std_score) as mean_std_reward
from fct_prompt_iteration
where run_id = $run and iteration = $iteration
