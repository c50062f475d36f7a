{# Each pair of a run's paired reward functions (int_reward_pair_functions;
   function_a <= function_b, a function with itself included) over its
   whole run: the co-moment of their per-sample rewards about the run's
   means, pooled exactly from the steps' (a step's co-moment, plus n x the
   product of its means' distances from the run's). Divided by n, a
   covariance (the diagonal: a variance). Only the step rows paired over
   the run's current functions count: a run past
   reward_pair_function_limit keeps none. #}
with

paired_functions as (
    select
        run_id,
        reward_function
    from {{ ref('int_reward_pair_functions') }}
    where is_paired
),

pair_keys as (
    select
        run_id,
        {{ stable_hash(ordered_string_agg(
            'reward_function', "';'", ['reward_function']
        )) }} as pairs_key
    from paired_functions
    group by 1
),

pairs as (
    select steps.*
    from {{ ref('int_reward_sample_pair_steps') }} as steps
    inner join pair_keys
        on steps.run_id = pair_keys.run_id and steps.pairs_key = pair_keys.pairs_key
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
        any_value(pooled.mean_a) as mean_a,
        any_value(pooled.mean_b) as mean_b,
        sum(
            pairs.comoment
            + pairs.n * (pairs.mean_a - pooled.mean_a)
            * (pairs.mean_b - pooled.mean_b)
        ) as comoment
    from pairs
    inner join pooled using (run_id, function_a, function_b)
    group by 1, 2, 3
)

select * from final
