{# One row per run with reward functions: which of them the pairwise marts
   (fct_reward_correlations, the quality score's redundancy warning) cover,
   by int_reward_pair_functions' rule, and a note saying so when not all.
   pairing: all (every function paired), top (the first
   reward_pair_max_functions by pair_rank), skipped (more than
   reward_pair_function_limit functions: no pairs). #}
{%- set max_functions = var('reward_pair_max_functions') -%}
{%- set function_limit = var('reward_pair_function_limit') -%}
{%- set rule = 'largest |weight|, then largest variance, then name' -%}
with

functions as (
    select
        run_id,
        reward_function,
        is_paired
    from {{ ref('int_reward_pair_functions') }}
),

counted as (
    select
        run_id,
        count(*) as reward_functions,
        count(*) filter (where is_paired) as paired_functions
    from functions
    group by 1
),

final as (
    select
        ---------- ids
        run_id,

        ---------- strings
        case
            when reward_functions > {{ function_limit }} then 'skipped'
            when reward_functions > {{ max_functions }} then 'top'
            else 'all'
        end as pairing,
        case
            when reward_functions > {{ function_limit }}
                then
                    'reward function pairs skipped: '
                    || cast(reward_functions as string)
                    || ' functions, more than reward_pair_function_limit'
                    || ' ({{ function_limit }}); no correlations or redundancy for'
                    || ' this run, its rewards are in every other mart'
            when reward_functions > {{ max_functions }}
                then
                    'reward function pairs over the top '
                    || cast(paired_functions as string)
                    || ' of ' || cast(reward_functions as string)
                    || ' functions ({{ rule }}; the var reward_pair_max_functions)'
        end as note,

        ---------- numerics
        reward_functions,
        paired_functions,
        {{ max_functions }} as max_functions,
        {{ function_limit }} as function_limit
    from counted
)

select * from final
