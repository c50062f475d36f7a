{{ config(materialized='view') }}
{# Reward monitoring's logged values, from the tracker histories, one row per
   run, step, reward function (null for a step-level value) and measure:
   - per function: the reward monitor's `rewards/functions/{fn}` (mean),
     `rewards/functions/{fn}_std` and `contributions/{fn}`, and TRL's
     `rewards/{fn}/mean` and `rewards/{fn}/std`, each also under TRL's
     `train/` prefix (never `eval/`: those are another split's rewards);
   - per step: the mean and std of the total reward (canonical reward_mean
     and reward_std: the monitor's `rewards/mean`, TRL's `reward`, ...), the
     monitor's `rewards/{min,max,total,signal_to_noise,entropy,variance}`,
     KL (canonical kl), policy entropy (canonical entropy),
     `training/advantage_mean|std`, `batch/size` and `batch/num_generations`.
   The held-out metric is int_reward_held_out's. Non-finite values are kept
   as they were logged. #}
with

history as (
    select
        run_id,
        step,
        metric,
        canonical_metric,
        value
    from {{ ref('int_metric_history').include(database=false) }}
),

parsed as (
    select
        run_id,
        step,
        value,
        metric,
        canonical_metric,
        regexp_extract(metric, '^(?:train/)?rewards/functions/(.+)$', 1) as seed_function,
        regexp_extract(metric, '^(?:train/)?contributions/(.+)$', 1) as contribution_function,
        regexp_extract(metric, '^(?:train/)?rewards/([^/]+)/(?:mean|std)$', 1) as trl_function,
        regexp_extract(metric, '^(?:train/)?rewards/[^/]+/(mean|std)$', 1) as trl_measure,
        regexp_extract(
            metric,
            '^(?:train/)?(?:rewards|training|batch)/'
            || '(min|max|total|signal_to_noise|entropy|variance|advantage_mean|advantage_std'
            || '|size|num_generations)$',
            1
        ) as step_measure
    from history
    where
        canonical_metric in ('reward_mean', 'reward_std', 'kl', 'entropy')
        or {{ regexp_contains(
            'metric', "'^(?:train/)?(?:rewards|contributions|training|batch)/'"
        ) }}
),

measures as (
    select
        run_id,
        step,
        case
            when seed_function != '' and right(seed_function, 4) = '_std'
                then left(seed_function, length(seed_function) - 4)
            when seed_function != '' then seed_function
            when contribution_function != '' then contribution_function
            when trl_function != '' and trl_function != 'functions' then trl_function
        end as reward_function,
        case
            when seed_function != '' and right(seed_function, 4) = '_std' then 'std'
            when seed_function != '' then 'mean'
            when contribution_function != '' then 'contribution'
            when trl_function != '' and trl_function != 'functions' then trl_measure
            when canonical_metric = 'reward_mean' then 'mean'
            when canonical_metric = 'reward_std' then 'std'
            when canonical_metric = 'kl' then 'kl_divergence'
            when canonical_metric = 'entropy' then 'policy_entropy'
            when step_measure = 'size' then 'batch_size'
            when step_measure != '' then step_measure
        end as measure,
        value,
        metric
    from parsed
),

{# A value logged under two keys (`rewards/functions/f` and
   `train/rewards/functions/f`) is one value: the first key's by name. #}
final as (
    select
        run_id,
        step,
        reward_function,
        measure,
        {{ arg_min('value', 'metric') }} as value
    from measures
    where measure is not null
    group by 1, 2, 3, 4
)

select * from final
