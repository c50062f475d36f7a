{# The reward functions' weights, fitted from what the trainer logged: one
   row per run and reward function, for every run that logged its total
   reward (canonical reward_mean) and its functions' step means at the same
   steps (TRL's `reward` beside `rewards/{f}/mean`, a reward monitor's
   `rewards/mean` beside `rewards/functions/{f}`). The trainer's total is a
   weighted sum of the functions' means at every step (a mean is linear),
   so the least-squares solution of total_t = sum_f w_f mean_f,t over the
   steps where the total and every function were logged gives the weights.
   Solved on the normal equations by Gauss-Jordan elimination, one CTE a
   pivot (at most reward_weight_fit_max_functions functions; the Gram
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
{#- the augmented matrix's entries, row by row: n rows, n + 1 columns -#}
{%- set entries = [] -%}
{%- for r in range(1, n + 1) -%}{%- for c in range(1, n + 2) -%}
    {%- do entries.append((r, c)) -%}
{%- endfor -%}{%- endfor -%}
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

{# The augmented normal equations [X'X | X'y], one row per entry: columns
   1..functions hold X'X, column max_functions + 1 holds X'y. #}
normal_equations as (
    select
        a.run_id,
        a.function_index as row_index,
        b.function_index as column_index,
        sum(a.x * b.x) as value
    from points as a
    inner join points as b on a.run_id = b.run_id and a.step = b.step
    where a.run_id in (select attempted.run_id from attempted)
    group by 1, 2, 3
    union all
    select
        points.run_id,
        points.function_index as row_index,
        {{ n + 1 }} as column_index,
        sum(points.x * points.y) as value
    from points
    inner join attempted on points.run_id = attempted.run_id
    group by 1, 2, 3
),

{# The same equations as one row per run, entry (r, c) in column m0_r_c
   (0 where a run has fewer functions), d_r the diagonal entry a pivot is
   judged against. Each pivot below is then one projection of the row
   before it: no window, no self-join, so the plan grows with the pivots on
   every engine. #}
matrix_0 as (
    select
        normal_equations.run_id,
        {%- for r in range(1, n + 1) %}
            coalesce(max(case
                when
                    normal_equations.row_index = {{ r }} and normal_equations.column_index = {{ r }}
                    then normal_equations.value
            end), 0.0) as d_{{ r }},
        {%- endfor %}
        {%- for r, c in entries %}
            coalesce(max(case
                when
                    normal_equations.row_index = {{ r }} and normal_equations.column_index = {{ c }}
                    then normal_equations.value
            end), 0.0) as m0_{{ r }}_{{ c }},
        {%- endfor %}
        any_value(attempted.functions) as functions
    from normal_equations
    inner join attempted on normal_equations.run_id = attempted.run_id
    group by 1
),

{% for p in range(1, n + 1) %}
{#- pivot {{ p }}: row {{ p }} divided by its diagonal entry, that column
    cleared from every other row; a run with fewer functions is unchanged.
    ratio_{{ p }} is the pivot against its starting diagonal entry. #}
    matrix_{{ p }} as (
        select
            run_id,
            {%- for r in range(1, n + 1) %}
                d_{{ r }},
            {%- endfor %}
            {%- for q in range(1, p) %}
                ratio_{{ q }},
            {%- endfor %}
            case
                when functions >= {{ p }}
                    then coalesce(m{{ p - 1 }}_{{ p }}_{{ p }} / nullif(d_{{ p }}, 0), 0.0)
            end as ratio_{{ p }},
            {%- for r, c in entries %}
                case
                    when functions < {{ p }} then m{{ p - 1 }}_{{ r }}_{{ c }}
                    {%- if r == p %}
                        else m{{ p - 1 }}_{{ p }}_{{ c }} / nullif(m{{ p - 1 }}_{{ p }}_{{ p }}, 0)
                    {%- else %}
                        else
                            m{{ p - 1 }}_{{ r }}_{{ c }}
                            - m{{ p - 1 }}_{{ r }}_{{ p }} * m{{ p - 1 }}_{{ p }}_{{ c }}
                            / nullif(m{{ p - 1 }}_{{ p }}_{{ p }}, 0)
                    {%- endif %}
                end as m{{ p }}_{{ r }}_{{ c }},
            {%- endfor %}
            functions
        from matrix_{{ p - 1 }}
    ),

{% endfor %}
{# least() passes over the pivots a run does not have (null) #}
conditioning as (
    select
        run_id,
        coalesce(least(
            {%- for p in range(1, n + 1) %}
                ratio_{{ p }}{{ "," if not loop.last }}
            {%- endfor %}
        ), 0.0) as smallest_pivot_ratio
    from matrix_{{ n }}
),

weights as (
    select
        functions.run_id,
        functions.function_index,
        case functions.function_index
            {%- for r in range(1, n + 1) %}
                when {{ r }} then matrix_{{ n }}.m{{ n }}_{{ r }}_{{ n + 1 }}
            {%- endfor %}
        end as weight
    from matrix_{{ n }}
    inner join functions on matrix_{{ n }}.run_id = functions.run_id
),

residuals as (
    select
        points.run_id,
        points.step,
        any_value(points.y) - sum(weights.weight * points.x) as residual
    from points
    inner join weights
        on points.run_id = weights.run_id and points.function_index = weights.function_index
    group by 1, 2
),

{# The same residual with the weights rounded to 3 decimals: a trainer's
   float32 totals leave the solve's weights off by about 1e-6 (more when the
   functions move nearly together), and a weight of 0 read as 2e-6 would not
   be logged only. The rounded weights are taken when they fit as well. #}
rounded_residuals as (
    select
        points.run_id,
        points.step,
        any_value(points.y) - sum(round(weights.weight, 3) * points.x) as residual
    from points
    inner join weights
        on points.run_id = weights.run_id and points.function_index = weights.function_index
    group by 1, 2
),

fit_quality as (
    select
        attempted.run_id,
        max(abs(residuals.residual))
        / greatest(any_value(attempted.total_scale), 1e-300) as relative_residual,
        max(abs(rounded_residuals.residual))
        / greatest(any_value(attempted.total_scale), 1e-300) as rounded_relative_residual
    from attempted
    inner join residuals on attempted.run_id = residuals.run_id
    inner join rounded_residuals
        on residuals.run_id = rounded_residuals.run_id and residuals.step = rounded_residuals.step
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
            when conditioning.smallest_pivot_ratio < 1e-6 then 'collinear'
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
        {#- decides a weight of exactly 0 (logged only): rounded when that fits -#}
        case
            when fit_quality.rounded_relative_residual <= {{ var('reward_weight_fit_tolerance') }}
                then round(weights.weight, 3)
            else round(weights.weight, 12)
        end as fitted_weight,
        round(fit_quality.relative_residual, 12) as relative_residual

    from functions
    inner join function_counts on functions.run_id = function_counts.run_id
    left join fit_sizes on functions.run_id = fit_sizes.run_id
    left join conditioning on functions.run_id = conditioning.run_id
    left join fit_quality on functions.run_id = fit_quality.run_id
    left join weights
        on
            functions.run_id = weights.run_id
            and functions.function_index = weights.function_index
)

select * from final
