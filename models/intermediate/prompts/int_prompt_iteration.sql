{{
    config(incremental_by(
        ['run_id', 'iteration'],
        unique_key=['run_id', 'iteration', 'prompt_hash'],
    ))
}}
{# How each prompt's group of rollouts scored at each iteration: the rows of
   fct_prompt_iteration (a view of this table). #}
with

{# Recompute only the (run, iteration) groups that received rows since the
   last build: landing iteration 101 leaves iterations 0..100 untouched
   (macro changed_rows). #}
rollouts as (
    {{ changed_rows(ref('int_rollouts_scored'), lookup=ref('stg_rollouts')) }}
),

ranked as (
    {# 1 for the best score of the (run, iteration, prompt) group, ties
       broken by sample_idx: mean_at_k averages ranks 1..k. #}
    select
        *,
        row_number() over (
            partition by run_id, iteration, prompt_hash
            order by score desc, sample_idx asc
        ) as score_rank
    from rollouts
),

aggregated as (
    select
        run_id,
        iteration,
        prompt_hash,
        count(*) as n_samples,
        avg(score) as mean_score,
        case
            when min(score) = max(score) then 0.0
            else stddev_samp(score)
        end as std_score,
        min(score) as min_score,
        max(score) as max_score,
        avg(v_i) as mean_v_i,
        avg(s_i) as mean_s_i,
        avg(inst_strict_acc) as mean_inst_strict_acc,
        max(num_instructions) as num_instructions,
        count(prompt_strict_acc) as n_judged_by_instructions,
        max(case when is_strict_success then 1 else 0 end) as prompt_strict_acc,
        avg(case when is_strict_success then 1 else 0 end) as strict_success_rate,
        avg(case when is_pass then 1 else 0 end) as pass_rate,
        {# the build's success (var success): solved when any rollout is #}
        max(case when is_success then 1 else 0 end) as solved,
        avg(case when is_success then 1 else 0 end) as success_rate,
        min(success_value) as min_success_value,
        max(success_value) as max_success_value,
        avg(score) filter (where score_rank <= 1)
            as mean_at_1,
        avg(score) filter (where score_rank <= 3)
            as mean_at_3,
        {#- exact: it orders the k-means start and the curriculum's order #}
        {{ exact_float('avg(score) filter (where score_rank <= 5)') }}
            as mean_at_5,
        avg(score) filter (where score_rank <= 10)
            as mean_at_10,
        avg(score) filter (where score_rank <= 20)
            as mean_at_20,
        avg(response_chars) as mean_response_chars,
        max(ingested_at) as ingested_through
    from ranked
    group by 1, 2, 3
),

{# GRPO's groups: the trainer's (group_id) where the rollouts name one,
   else the prompt's samples at the iteration. A prompt may be several
   groups at one step (verl's multi-output sessions, prime-rl's groups
   across step files); each is zero-variance or not on its own. #}
trainer_groups as (
    select
        run_id,
        iteration,
        prompt_hash,
        coalesce(group_id, '') as group_key,
        min(score) = max(score) as is_zero_variance,
        {# solved as a prompt is: when any of its rollouts succeeds (with
           equal scores they agree, unless the rule reads more than the
           score) #}
        max(case when is_success then 1 else 0 end) = 1 as is_solved
    from rollouts
    group by 1, 2, 3, 4
),

group_counts as (
    select
        run_id,
        iteration,
        prompt_hash,
        count(*) as n_groups,
        count(*) filter (where is_zero_variance) as n_zero_variance_groups,
        count(*) filter (where is_zero_variance and is_solved)
            as n_zero_variance_groups_solved,
        count(*) filter (where is_zero_variance and not is_solved)
            as n_zero_variance_groups_failed
    from trainer_groups
    group by 1, 2, 3
),

with_groups as (
    select
        aggregated.*,
        group_counts.n_groups,
        group_counts.n_zero_variance_groups,
        group_counts.n_zero_variance_groups_solved,
        group_counts.n_zero_variance_groups_failed
    from aggregated
    inner join group_counts
        on
            aggregated.run_id = group_counts.run_id
            and aggregated.iteration = group_counts.iteration
            and aggregated.prompt_hash = group_counts.prompt_hash
),

final as (
    select
        ---------- ids
        run_id,
        iteration,
        prompt_hash,

        ---------- strings
        {# under the build's success (var success), as the learning
           counts: a prompt is never stuck solved where it is unsolved #}
        case
            when min_score < max_score then null
            when solved = 1 then 'all_solved'
            else 'all_failed'
        end as zero_variance_outcome,

        ---------- numerics
        n_samples,
        mean_score,
        std_score,
        min_score,
        max_score,
        mean_v_i,
        mean_s_i,
        mean_inst_strict_acc,
        num_instructions,
        n_judged_by_instructions,
        prompt_strict_acc,
        strict_success_rate,
        max_score - mean_score as best_mean_gap,
        1.0 / (1.0 + std_score) as consistency_score,
        pass_rate,
        success_rate,
        min_success_value,
        max_success_value,
        mean_at_1,
        mean_at_3,
        mean_at_5,
        mean_at_10,
        mean_at_20,
        mean_response_chars,
        n_groups,
        n_zero_variance_groups,
        n_zero_variance_groups_solved,
        n_zero_variance_groups_failed,

        ---------- booleans
        min_score = max_score as is_zero_variance,
        solved = 1 as is_solved,

        ---------- timestamps
        ingested_through

    from with_groups
)

select * from final
