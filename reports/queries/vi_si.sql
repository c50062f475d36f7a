-- The V_i/S_i sample, capped at $scatter_cap points per run spread evenly over
-- its iterations (the mart already holds a seeded random sample).
with points as (
    select
        *,
        row_number() over (
            partition by run_id, iteration order by prompt_hash, sample_idx
        ) as nth
    from fct_vi_si_points
    where
        list_contains($runs, run_id)
        and ($iterations is null or list_contains($iterations, iteration))
),

per_run as (
    select
        run_id,
        count(distinct iteration) as n_iterations
    from points
    group by 1
)

select
    points.run_id,
    points.iteration,
    points.prompt_hash,
    points.v_i,
    points.s_i,
    points.score,
    points.alpha_threshold,
    points.reward_case,
    left(coalesce(dim_prompts.prompt_preview, ''), 60) as prompt_preview
from points
inner join per_run on points.run_id = per_run.run_id
left join dim_prompts on points.prompt_hash = dim_prompts.prompt_hash
where points.nth <= greatest(1, $scatter_cap // per_run.n_iterations)
-- (sample_idx is not selected: no position to name it by)
order by points.run_id, points.iteration, points.prompt_hash, points.sample_idx  -- noqa: AM06
