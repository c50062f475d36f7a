{{ config(incremental_by(['run_id', 'iteration'])) }}
with

fct_prompt_iteration as (
    select
        run_id,
        iteration,
        n_samples,
        mean_score,
        std_score,
        min_score,
        max_score,
        n_judged_by_instructions,
        prompt_strict_acc,
        strict_success_rate,
        pass_rate,
        is_solved,
        success_rate,
        min_success_value,
        max_success_value,
        mean_response_chars,
        n_groups,
        n_zero_variance_groups,
        n_zero_variance_groups_solved,
        n_zero_variance_groups_failed,
        ingested_through
    from ({{
        changed_rows(ref('fct_prompt_iteration'), upstream_time='ingested_through')
    }})
),

aggregated as (
    select
        ---------- ids
        run_id,
        iteration,

        ---------- strings
        {# how the iteration's prompts were judged solved (var success,
           macro success_rule): under strict (the default), each rollout's
           own prompt_strict_acc where it carries one, else its score
           against var pass_threshold; else 'score' or 'function' (the
           rule's threshold on the score or on a reward function's value) #}
        case
            when '{{ success_rule().kind }}' in ('score', 'function')
                then '{{ success_rule().kind }}'
            when sum(n_judged_by_instructions) = 0 then 'pass_threshold'
            when sum(n_judged_by_instructions) = sum(n_samples)
                then 'instructions'
            else 'both'
        end as solved_by,

        ---------- numerics
        cast(sum(n_samples) as bigint) as n_rollouts,
        count(*) as n_prompts,
        sum(mean_score * n_samples) / sum(n_samples)
            as mean_score,
        min(min_score) as min_score,
        max(max_score) as max_score,
        cast(sum(n_judged_by_instructions) as bigint)
            as n_judged_by_instructions,
        avg(std_score) as mean_std_score,
        avg(prompt_strict_acc) as prompt_strict_acc,
        {# the share of prompts solved under the build's success #}
        avg(case when is_solved then 1 else 0 end)
            as solved_share,
        sum(success_rate * n_samples) / sum(n_samples) as success_rate,
        min(min_success_value) as min_success_value,
        max(max_success_value) as max_success_value,
        sum(strict_success_rate * n_samples) / sum(n_samples) as strict_success_rate,
        sum(pass_rate * n_samples) / sum(n_samples)
            as pass_rate,
        sum(mean_response_chars * n_samples) / sum(n_samples) as mean_response_chars,
        {# the trainer's groups (a prompt's samples where none is named) #}
        cast(sum(n_groups) as bigint) as n_groups,
        cast(sum(n_zero_variance_groups) as bigint) as n_zero_variance,
        cast(sum(n_zero_variance_groups_solved) as bigint)
            as n_zero_variance_solved,
        cast(sum(n_zero_variance_groups_failed) as bigint)
            as n_zero_variance_failed,
        sum(n_zero_variance_groups) / sum(n_groups) as zero_variance_share,

        ---------- timestamps
        max(ingested_through) as ingested_through

    from fct_prompt_iteration
    group by 1, 2
)

select * from aggregated
