{# The reward functions' weights, fitted from what the trainer logged: one
   row per run and reward function, for every run that logged its total
   reward (canonical reward_mean) and its functions' step means at the same
   steps (TRL's `reward` beside `rewards/{f}/mean`, a reward monitor's
   `rewards/mean` beside `rewards/functions/{f}`). The trainer's total is a
   weighted sum of the functions' means at every step (a mean is linear),
   so the least-squares solution of total_t = sum_f w_f mean_f,t over the
   steps where the total and every function were logged gives the weights.
   Solved on the normal equations by Gauss-Jordan elimination, one step
   of a fold over a list per run a pivot (at most reward_weight_fit_max_functions functions; the Gram
   matrix of a run's functions is symmetric positive definite unless two
   of them move together, so no row swaps are needed). fit_status:
   - fitted: at least functions + 2 steps, no function a combination of
     the others (each pivot at least 1e-6 of its diagonal entry: a function
     that the others explain to within 1 part in a million), and the
     largest |total - fitted total| at most reward_weight_fit_tolerance of
     the largest |total|;
   - residual: the fit leaves more than that (the logged total is not a
     weighted sum of these functions: another reward, a penalty not logged
     as a function, a clipped or normalised total);
   - collinear: two or more functions' means move together, so their
     weights cannot be told apart;
   - too_few_steps, too_many_functions: not attempted.
   fitted_weight is rounded to 3 decimals when the rounded weights fit within
   the tolerance too (float32 totals leave 1e-6 of noise in a weight: a
   weight logged at 0 must read 0), else to 12. fct_reward_weights decides
   which weights a run gets. #}
{%- set max_functions = var('reward_weight_fit_max_functions') -%}
{%- set n = max_functions -%}
with

logged as (
    select
        run_id,
        step,
        reward_function,
        value
    from {{ ref('int_reward_logged') }}
    where measure = 'mean' and {{ is_finite('value') }}
),

totals as (
    select
        run_id,
        step,
        value as total
    from logged
    where reward_function is null
),

function_means as (
    select
        run_id,
        step,
        reward_function,
        value as mean
    from logged
    where reward_function is not null
),

logged_functions as (
    select distinct
        run_id,
        reward_function
    from function_means
),

functions as (
    select
        run_id,
        reward_function,
        dense_rank() over (partition by run_id order by reward_function) as function_index
    from logged_functions
),

function_counts as (
    select
        run_id,
        count(*) as functions
    from functions
    group by 1
),

{# the steps where the total and every function's mean were logged #}
complete_steps as (
    select
        totals.run_id,
        totals.step,
        totals.total
    from totals
    inner join function_means
        on totals.run_id = function_means.run_id and totals.step = function_means.step
    inner join function_counts on totals.run_id = function_counts.run_id
    group by 1, 2, 3
    having count(*) = any_value(function_counts.functions)
),

points as (
    select
        complete_steps.run_id,
        complete_steps.step,
        functions.function_index,
        function_means.mean as x,
        complete_steps.total as y
    from complete_steps
    inner join function_means
        on
            complete_steps.run_id = function_means.run_id
            and complete_steps.step = function_means.step
    inner join functions
        on
            function_means.run_id = functions.run_id
            and function_means.reward_function = functions.reward_function
),

fit_sizes as (
    select
        function_counts.run_id,
        function_counts.functions,
        count(distinct complete_steps.step) as points,
        max(abs(complete_steps.total)) as total_scale
    from function_counts
    inner join complete_steps on function_counts.run_id = complete_steps.run_id
    group by 1, 2
),

attempted as (
    select *
    from fit_sizes
    where functions <= {{ max_functions }} and points >= functions + 2
),

{# The normal equations, one row per entry (r, c) of X'X, with row r's
   entry of X'y beside it (every c alike). One read of the points: Spark
   inlines every CTE where it is read, so each CTE below is read once or
   twice, not once per use. #}
normal_equations as (
    select
        a.run_id,
        any_value(attempted.functions) as functions,
        a.function_index as row_index,
        b.function_index as column_index,
        sum(a.x * b.x) as xx,
        sum(a.x * a.y) as xy
    from points as a
    inner join points as b on a.run_id = b.run_id and a.step = b.step
    inner join attempted on a.run_id = attempted.run_id
    group by 1, 3, 4
),

{# The elimination's state, one list per run (k functions, w = k + 1):
   slot 1 the pivots done, slot 1 + (r - 1) w + c entry (r, c) of the
   augmented matrix [X'X | X'y], slot 1 + k w + r row r's diagonal entry
   (until pivot r replaces it by the pivot / that entry). slot_rows and
   slot_columns say which a slot is (0 and 0: the count; r and 0: a ratio).
   Each entry of the normal equations makes the slots of its kind. #}
kinds as (
    select 'entry' as kind
    union all
    select 'right_side' as kind
    union all
    select 'ratio' as kind
    union all
    select 'count' as kind
),

slots as (
    select
        normal_equations.run_id,
        normal_equations.functions,
        case kinds.kind
            when 'count' then 1
            when 'ratio'
                then
                    1 + normal_equations.functions * (normal_equations.functions + 1)
                    + normal_equations.row_index
            else
                1 + (normal_equations.row_index - 1) * (normal_equations.functions + 1)
                + case
                    when kinds.kind = 'entry' then normal_equations.column_index
                    else normal_equations.functions + 1
                end
        end as slot,
        case when kinds.kind = 'count' then 0 else normal_equations.row_index end as row_index,
        case
            when kinds.kind = 'entry' then normal_equations.column_index
            when kinds.kind = 'right_side' then normal_equations.functions + 1
            else 0
        end as column_index,
        case
            when kinds.kind = 'count' then 0.0
            when kinds.kind = 'right_side' then normal_equations.xy
            else normal_equations.xx
        end as value
    from normal_equations
    cross join kinds
    where
        kinds.kind = 'entry'
        or (
            kinds.kind in ('right_side', 'ratio')
            and normal_equations.row_index = normal_equations.column_index
        )
        or (
            kinds.kind = 'count'
            and normal_equations.row_index = 1
            and normal_equations.column_index = 1
        )
),

start as (
    select
        run_id,
        {#- int: Spark's element_at takes an int position -#}
        cast(any_value(functions) as int) as functions,
        {{ ordered_list('cast(slot as int)', ['slot']) }} as slot_numbers,
        {{ ordered_list('cast(row_index as int)', ['slot']) }} as slot_rows,
        {{ ordered_list('cast(column_index as int)', ['slot']) }} as slot_columns,
        {{ ordered_list('cast(value as double)', ['slot']) }} as state
    from slots
    group by 1
),

{#- Gauss-Jordan, one pivot a fold step (q, the next pivot; nothing once q
    passes k): row q divided by its diagonal entry, column q cleared from
    every other row as entry - entry(r, q) * entry(q, c) / pivot. A run's
    whole solve is one expression, so the plan does not grow with the
    pivots on any engine. #}
{%- set q = "(cast(" ~ list_element('state', 1) ~ " as int) + 1)" -%}
{%- set w = "(functions + 1)" -%}
{%- set row = list_element('slot_rows', 'slot') -%}
{%- set column = list_element('slot_columns', 'slot') -%}
{%- set pivot_entry = list_element('state', "1 + (" ~ q ~ " - 1) * " ~ w ~ " + " ~ q) -%}
{%- set pivot = "nullif(" ~ pivot_entry ~ ", 0)" -%}
{%- set in_pivot_row = list_element('state', "1 + (" ~ q ~ " - 1) * " ~ w ~ " + " ~ column) -%}
{%- set in_pivot_column = list_element('state', "1 + (" ~ row ~ " - 1) * " ~ w ~ " + " ~ q) -%}
{%- set entry = list_element('state', 'slot') %}
{%- set pivot_step = list_map('slot_numbers', 'slot', "case"
    ~ " when " ~ q ~ " > functions then " ~ entry
    ~ " when " ~ row ~ " = 0 then cast(" ~ q ~ " as double)"
    ~ " when " ~ column ~ " = 0 and " ~ row ~ " = " ~ q
    ~ " then coalesce(" ~ pivot ~ " / nullif(" ~ entry ~ ", 0), 0.0)"
    ~ " when " ~ column ~ " = 0 then " ~ entry
    ~ " when " ~ row ~ " = " ~ q ~ " then " ~ in_pivot_row ~ " / " ~ pivot
    ~ " else " ~ entry ~ " - " ~ in_pivot_column ~ " * " ~ in_pivot_row ~ " / " ~ pivot
    ~ " end") %}

solved as (
    select
        run_id,
        functions,
        {{ repeat_fold(n, 'state', 'state', pivot_step) }} as state
    from start
),

{# the weights (column k + 1), and the smallest pivot against its diagonal
   entry of the run's #}
weights as (
    select
        run_id,
        function_index,
        weight,
        coalesce(min(pivot_ratio) over (partition by run_id), 0.0) as smallest_pivot_ratio
    from (
        select
            solved.run_id,
            functions.function_index,
            {{ list_element(
                'solved.state', '1 + functions.function_index * (solved.functions + 1)'
            ) }} as weight,
            {{ list_element(
                'solved.state',
                '1 + solved.functions * (solved.functions + 1) + functions.function_index'
            ) }} as pivot_ratio
        from solved
        inner join functions on solved.run_id = functions.run_id
    ) as solution
),

{# The largest residual, and the same with the weights rounded to 3
   decimals: a trainer's float32 totals leave the solve's weights off by
   about 1e-6 (more when the functions move nearly together), and a weight
   of 0 read as 2e-6 would not be logged only. The rounded weights are
   taken when they fit as well. #}
residuals as (
    select
        points.run_id,
        points.step,
        any_value(points.y) - sum(weights.weight * points.x) as residual,
        any_value(points.y) - sum(round(weights.weight, 3) * points.x) as rounded_residual
    from points
    inner join weights
        on points.run_id = weights.run_id and points.function_index = weights.function_index
    group by 1, 2
),

fit_quality as (
    select
        residuals.run_id,
        max(abs(residuals.residual))
        / greatest(any_value(fit_sizes.total_scale), 1e-300) as relative_residual,
        max(abs(residuals.rounded_residual))
        / greatest(any_value(fit_sizes.total_scale), 1e-300) as rounded_relative_residual
    from residuals
    inner join fit_sizes on residuals.run_id = fit_sizes.run_id
    group by 1
),

final as (
    select
        ---------- ids
        functions.run_id,
        functions.reward_function,

        ---------- strings
        case
            when fit_sizes.functions > {{ max_functions }} then 'too_many_functions'
            when fit_sizes.run_id is null or fit_sizes.points < fit_sizes.functions + 2
                then 'too_few_steps'
            when weights.smallest_pivot_ratio < 1e-6 then 'collinear'
            {#- decides whether the fitted weights are used: a threshold a
                user sees in found_by #}
            when
                fit_quality.relative_residual is null
                or fit_quality.relative_residual > {{ var('reward_weight_fit_tolerance') }}
                then 'residual'
            else 'fitted'
        end as fit_status,

        ---------- numerics
        function_counts.functions,
        coalesce(fit_sizes.points, 0) as points,
        {#- to 12 decimals: the solve's last bits depend on the order the
            engine added in, and a residual of 1e-16 is rounding alone -#}
        {#- decides a weight of exactly 0 (logged only): rounded when that fits;
            + 0.0 turns a rounded -0.0 (a weight of -2e-7) into 0 -#}
        case
            when fit_quality.rounded_relative_residual <= {{ var('reward_weight_fit_tolerance') }}
                then round(weights.weight, 3) + 0.0
            else round(weights.weight, 12) + 0.0
        end as fitted_weight,
        round(fit_quality.relative_residual, 12) as relative_residual

    from functions
    inner join function_counts on functions.run_id = function_counts.run_id
    left join fit_sizes on functions.run_id = fit_sizes.run_id
    left join fit_quality on functions.run_id = fit_quality.run_id
    left join weights
        on
            functions.run_id = weights.run_id
            and functions.function_index = weights.function_index
)

select * from final
