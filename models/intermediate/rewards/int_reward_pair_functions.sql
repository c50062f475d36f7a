{# Which of a run's reward functions the pairwise models pair (the
   co-moments of int_reward_sample_pair_steps, fct_reward_correlations):
   one row per run and reward function (int_reward_weights). The pairs of
   a run's functions grow with the square of their number, so a run pairs
   at most reward_pair_max_functions of them, taken by pair_rank: the
   largest |weight| first (the reward the trainer optimised), then the
   largest pooled variance (a function that never varies correlates with
   nothing), then the name. A run with more than reward_pair_function_limit
   functions pairs none: its rewards land in every other mart, its pairs
   are skipped (fct_reward_pair_selection says so). One pass over the
   run's functions: linear in their number. #}
{%- set max_functions = var('reward_pair_max_functions') -%}
{%- set function_limit = var('reward_pair_function_limit') -%}
{%- if max_functions is not number or max_functions is boolean or max_functions < 2 -%}
    {{ exceptions.raise_compiler_error(
        "var reward_pair_max_functions: a whole number of at least 2, not " ~ max_functions | string) }}
{%- endif -%}
{%- if function_limit is not number or function_limit is boolean
    or function_limit < max_functions -%}
    {{ exceptions.raise_compiler_error(
        "var reward_pair_function_limit: a whole number of at least reward_pair_max_functions ("
        ~ max_functions | string ~ "), not " ~ function_limit | string) }}
{%- endif -%}
with

weights as (
    select
        run_id,
        reward_function,
        weight
    from {{ ref('int_reward_weights') }}
),

function_runs as (
    select
        run_id,
        reward_function,
        std
    from {{ ref('int_reward_function_runs') }}
),

ranked as (
    select
        weights.run_id,
        weights.reward_function,
        weights.weight,
        function_runs.std * function_runs.std as variance,
        count(*) over (partition by weights.run_id) as run_functions,
        row_number() over (
            partition by weights.run_id
            order by
                abs(weights.weight) desc nulls last,
                function_runs.std desc nulls last,
                weights.reward_function asc
        ) as pair_rank
    from weights
    left join function_runs
        on
            weights.run_id = function_runs.run_id
            and weights.reward_function = function_runs.reward_function
),

final as (
    select
        ---------- ids
        run_id,
        reward_function,

        ---------- numerics
        weight,
        variance,
        run_functions,
        pair_rank,

        ---------- booleans
        run_functions <= {{ function_limit }}
        and pair_rank <= {{ max_functions }} as is_paired
    from ranked
)

select * from final
