{# Each pair of reward functions (function_a <= function_b, a function with
   itself included) over its whole run: the co-moment of their per-sample
   rewards about the run's means, pooled exactly from the steps' (a step's
   co-moment, plus n x the product of its means' distances from the run's).
   Divided by n, a covariance (the diagonal: a variance). #}
with

pairs as (
    select * from {{ ref('int_reward_sample_pair_steps') }}
),

pooled as (
    select
        run_id,
        function_a,
        function_b,
        cast(sum(n) as bigint) as n,
        sum(n * mean_a) / sum(n) as mean_a,
        sum(n * mean_b) / sum(n) as mean_b
    from pairs
    group by 1, 2, 3
),

final as (
    select
        ---------- ids
        pairs.run_id,
        pairs.function_a,
        pairs.function_b,

        ---------- numerics
        any_value(pooled.n) as n,
        {{ exact_float('any_value(pooled.mean_a)') }} as mean_a,
        {{ exact_float('any_value(pooled.mean_b)') }} as mean_b,
        {{ exact_float('sum(
            pairs.comoment
            + pairs.n * (pairs.mean_a - pooled.mean_a)
            * (pairs.mean_b - pooled.mean_b)
        )') }} as comoment
    from pairs
    inner join pooled using (run_id, function_a, function_b)
    group by 1, 2, 3
)

select * from final
