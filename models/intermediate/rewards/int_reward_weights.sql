{# The weight of every reward function of every run (the rows of
   fct_reward_weights, a view of this table): R = sum_f w_f r_f is
   the reward the trainer optimised, the R of every reward mart. One row per
   run and reward function (from its samples or its logged means). A weight
   is found, first that applies:
   - given: the var reward_weights, for the run or '*' (every run);
   - source: the run's rollouts name it (a prime-rl trace's weights);
   - config: the run's tracker config names it (`reward_weights`: an
     object of function -> weight, or a list in the order of the rollouts'
     reward functions, TRL's reward columns, as TRL's GRPOConfig logs it);
   - fitted: from the logged total reward against the functions' logged
     means (int_reward_weight_fits), rounded to 6 decimals (a float32 total
     gives 0.99999994 for 1);
   - unknown: the fit was tried and failed (its status in fit_status); the
     weight is 1 and the note says what to pass;
   - assumed: nothing says: 1, as TRL's and the reward monitor's default.
   A function at weight 0 is logged only: in the run's reward marts it is
   never a suspect and never a contribution. #}
{%- set given = var('reward_weights') -%}
{%- set pass_weights = 'Pass them: obs ingest rollouts ... --reward-weights f=w,g=v,'
    ~ ' or the var reward_weights (obs build --vars ...)' -%}
{%- if given is not mapping -%}
    {{ exceptions.raise_compiler_error(
        "var reward_weights: a mapping of run id (or '*') to {function: weight}, not "
        ~ given | string) }}
{%- endif -%}
with

sample_functions as (
    select
        run_id,
        reward_function,
        max(source_weight) as source_weight,
        min(lowest_source_weight) as lowest_source_weight,
        max(function_position) as function_position
    from {{ ref('int_reward_sample_function_steps') }}
    group by 1, 2
),

logged_functions as (
    select distinct
        run_id,
        reward_function
    from {{ ref('int_reward_logged') }}
    where reward_function is not null and measure = 'mean'
),

functions as (
    select
        run_id,
        reward_function
    from sample_functions
    union
    select
        run_id,
        reward_function
    from logged_functions
),

given_weights as (
    {%- set rows = [] -%}
    {%- for run, weights in given.items() -%}
        {%- if weights is not mapping -%}
            {{ exceptions.raise_compiler_error(
                "var reward_weights: the weights of run " ~ run ~ " are a mapping {function: weight}") }}
        {%- endif -%}
        {%- for function, weight in weights.items() -%}
            {%- if weight is not number or weight is boolean -%}
                {{ exceptions.raise_compiler_error(
                    "var reward_weights: the weight of " ~ function ~ " (run " ~ run ~ ") is not a number: "
                    ~ weight | string) }}
            {%- endif -%}
            {%- do rows.append((run | string, function | string, weight)) -%}
        {%- endfor -%}
    {%- endfor -%}
    {%- for run, function, weight in rows %}
    select
        '{{ run | replace("'", "''") }}' as run_id,
        '{{ function | replace("'", "''") }}' as reward_function,
        cast({{ weight }} as double) as weight
    {{ "union all" if not loop.last }}
    {%- else %}
        select
            cast(null as string) as run_id,
            cast(null as string) as reward_function,
            cast(null as double) as weight
        where false
    {%- endfor %}
),

{# reward_weights in the run's config: an object by function name, or a
   list in the order of the rollouts' reward functions (TRL's reward
   columns), also when the tracker logged it as text #}
run_settings as (
    select
        run_id,
        {{ try_as_json(json_text('config', 'reward_weights')) }} as reward_weights
    from {{ ref('int_run_attributes') }}
),

config_weights as (
    select
        functions.run_id,
        functions.reward_function,
        case {{ json_kind('run_settings.reward_weights') }}
            when 'ARRAY'
                then try_cast({{ json_at(
                    'run_settings.reward_weights', index='sample_functions.function_position - 1'
                ) }} as double)
            when 'OBJECT'
                then try_cast({{ json_at(
                    'run_settings.reward_weights', name='functions.reward_function'
                ) }} as double)
        end as weight
    from functions
    inner join run_settings on functions.run_id = run_settings.run_id
    left join sample_functions
        on
            functions.run_id = sample_functions.run_id
            and functions.reward_function = sample_functions.reward_function
),

fits as (
    select
        run_id,
        reward_function,
        fit_status,
        points,
        fitted_weight,
        relative_residual
    from {{ ref('int_reward_weight_fits') }}
),

found as (
    select
        functions.run_id,
        functions.reward_function,
        coalesce(exact.weight, every_run.weight) as given_weight,
        case
            when sample_functions.source_weight = sample_functions.lowest_source_weight
                then sample_functions.source_weight
        end as source_weight,
        config_weights.weight as config_weight,
        case when fits.fit_status = 'fitted' then round(fits.fitted_weight, 6) end as fitted_weight,
        fits.fit_status,
        fits.points as fit_points,
        fits.relative_residual as fit_relative_residual
    from functions
    left join given_weights as exact
        on functions.run_id = exact.run_id and functions.reward_function = exact.reward_function
    left join given_weights as every_run
        on every_run.run_id = '*' and functions.reward_function = every_run.reward_function
    left join sample_functions
        on
            functions.run_id = sample_functions.run_id
            and functions.reward_function = sample_functions.reward_function
    left join config_weights
        on
            functions.run_id = config_weights.run_id
            and functions.reward_function = config_weights.reward_function
    left join fits
        on functions.run_id = fits.run_id and functions.reward_function = fits.reward_function
),

decided as (
    select
        *,
        case
            when given_weight is not null then 'given'
            when source_weight is not null then 'source'
            when config_weight is not null then 'config'
            when fitted_weight is not null then 'fitted'
            when fit_status in ('residual', 'collinear') then 'unknown'
            else 'assumed'
        end as found_by,
        coalesce(given_weight, source_weight, config_weight, fitted_weight, 1.0) as weight
    from found
),

final as (
    select
        ---------- ids
        run_id,
        reward_function,

        ---------- strings
        found_by,
        fit_status,
        case
            when found_by = 'unknown' and fit_status = 'residual'
                then
                    'weights unknown: the logged total reward is no weighted sum of the'
                    || ' logged means of the functions (largest residual '
                    || {{ format_fixed('100.0 * fit_relative_residual', 2) }}
                    || '% of the total); R is their plain sum. {{ pass_weights }}'
            when found_by = 'unknown'
                then
                    'weights unknown: two or more functions move together, so the logged'
                    || ' total cannot tell their weights apart; R is their plain sum.'
                    || ' {{ pass_weights }}'
        end as note,

        ---------- numerics
        weight,
        fit_points,
        fit_relative_residual,

        ---------- booleans
        weight = 0 as is_logged_only

    from decided
)

select * from final
