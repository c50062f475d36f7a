{# Each logged metric obs can recompute, at each step that has both a
   logged point and rollouts, set against the recomputed value: one row per
   run, step and logged key. Step alignment: rollout iteration N is tracker
   step N for every source (verl dumps {N}.jsonl at global step N, the step
   its file logger and trackers log; TRL writes completions_{N}.parquet at
   global step N, the step of log_history and its trackers; prime-rl's
   rollouts/step_N and metrics.jsonl share the orchestrator's step). Of a
   metric's conventions the comparable one closest to the logged value is
   kept (ties: the first listed), so a convention is never a disagreement.
   Tolerance: |logged - recomputed| <= audit_abs_tolerance (1e-6) +
   audit_rel_tolerance (1e-4) x |recomputed|. #}
with

metric_history as (
    select
        run_id,
        step,
        metric,
        canonical_metric,
        value
    from {{ ref('int_metric_history') }}
),

recomputed as (
    select * from {{ ref('int_metric_audit_recomputed') }}
),

{# the logged keys the audit reads, named as the recomputed side names them #}
logged as (
    select
        run_id,
        step,
        metric,
        value as logged_value,
        case
            when {{ regexp_contains('metric', "'^(train/)?rewards/.+/mean$'") }}
                then 'reward_function_mean'
            when {{ regexp_contains('metric', "'(^|/)solve_(all|none|some)$'") }}
                then regexp_extract(metric, '(solve_(all|none|some))$', 1)
            when canonical_metric in (
                'reward_mean', 'reward_std', 'zero_std_frac', 'response_length', 'clip_ratio'
            ) then canonical_metric
        end as audit_metric,
        case
            when {{ regexp_contains('metric', "'^(train/)?rewards/.+/mean$'") }}
                then regexp_extract(metric, '^(train/)?rewards/(.+)/mean$', 2)
            else ''
        end as function_name
    from metric_history
),

matched as (
    select
        logged.run_id,
        logged.step,
        logged.metric,
        logged.audit_metric,
        logged.function_name,
        recomputed.convention,
        logged.logged_value,
        recomputed.recomputed_value,
        recomputed.is_comparable,
        recomputed.preference,
        case
            when recomputed.is_comparable and {{ is_finite('logged.logged_value') }}
                then abs(logged.logged_value - recomputed.recomputed_value)
        end as difference,
        {{ var('audit_abs_tolerance', 1e-6) }}
        + {{ var('audit_rel_tolerance', 1e-4) }} * abs(recomputed.recomputed_value)
            as tolerance
    from logged
    inner join recomputed
        on
            logged.run_id = recomputed.run_id
            and logged.step = recomputed.iteration
            and logged.audit_metric = recomputed.audit_metric
            and logged.function_name = coalesce(recomputed.function_name, '')
    where logged.audit_metric is not null
),

ranked as (
    select
        *,
        row_number() over (
            partition by run_id, step, metric
            order by
                difference is null,
                difference > tolerance nulls last,
                difference nulls last,
                preference
        ) as match_rank
    from matched
),

chosen as (
    select *
    from ranked
    where match_rank = 1
),

final as (
    select
        ---------- ids
        run_id,
        step,
        metric,

        ---------- strings
        audit_metric as canonical_metric,
        nullif(function_name, '') as reward_function,
        convention,
        case
            when difference is null then 'not_comparable'
            when difference <= tolerance then 'agrees'
            else 'disagrees'
        end as verdict,

        ---------- numerics
        logged_value,
        recomputed_value,
        difference,
        tolerance
    from chosen
)

select * from final
