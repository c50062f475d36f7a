{# How much of what the model was asked for could be parsed, per training
   step: a gap between expected and extracted orders is a parsing failure
   (prompt structure or model degradation), so it is reported both as a count
   and as a share of what was expected. #}
with

steps as (
    select * from {{ ref('int_run_steps') }}
),

logged as (
    select
        run_id,
        step,
        extraction_rate,
        orders_expected,
        orders_extracted,
        empty_responses,
        partial_responses
    from steps
    where
        extraction_rate is not null
        or orders_expected is not null
        or orders_extracted is not null
        or empty_responses is not null
        or partial_responses is not null
),

final as (
    select
        run_id,
        step,
        extraction_rate,
        orders_expected,
        orders_extracted,
        orders_expected - orders_extracted as extraction_gap,
        case
            when orders_expected > 0 and {{ is_finite('orders_expected') }}
                then (orders_expected - orders_extracted) / orders_expected
        end as extraction_gap_share,
        case
            when orders_expected > 0 and {{ is_finite('orders_expected') }}
                then orders_extracted / orders_expected
        end as extracted_share,
        empty_responses,
        partial_responses,
        case
            when {{ is_finite('extraction_rate') }}
                then extraction_rate < {{ var('extraction_rate_min') }}
        end as is_below_target,
        case
            when orders_expected > 0 and {{ is_finite('orders_expected') }}
                then
                    (orders_expected - orders_extracted) / orders_expected
                    > {{ var('extraction_gap_max') }}
        end as is_gap_large
    from logged
)

select * from final
