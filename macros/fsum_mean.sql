{% macro fsum_mean(expression) %}
{#- Aggregate: the mean of a double over the rows where it is a number
    (null and NaN left out; NaN when none is), its sum correctly rounded
    (Python's math.fsum, divided by the count): the same bits whatever
    order the rows come in. -#}
    {{ return(adapter.dispatch('fsum_mean', 'obs')(expression)) }}
{% endmacro %}

{#- Spark: a plain average (within 1e-15 of the exact one). -#}
{% macro default__fsum_mean(expression) %}
    coalesce(
        avg(case when not isnan({{ expression }}) then {{ expression }} end),
        double('NaN')
    )
{% endmacro %}

{#- DuckDB: the sum made exact in a 128-bit integer. Each value is m * 2^e
    with an integer m of 53 bits; shifted to the smallest e of the group
    (floored so the sum fits: values more than 2^(72 - log2 n) below the
    largest lose their lowest bits) the m add exactly, and the sum's top 53
    bits, rounded half to even, are the double. -#}
{% macro duckdb__fsum_mean(expression) %}
    list_transform(
        [list_filter(list(cast({{ expression }} as double)), v -> not isnan(v))],
        kept -> case
            when len(kept) = 0 then cast('nan' as double)
            when not list_bool_and(list_transform(kept, v -> isfinite(v)))
                then list_sum(kept) / len(kept)
            else list_transform(
                [list_transform(
                    list_filter(kept, v -> v != 0),
                    v -> list_transform(
                        [cast(floor(log2(abs(v))) as integer)],
                        guess -> guess
                            - case when pow(2.0, guess) > abs(v) then 1 else 0 end
                            + case when pow(2.0, guess + 1) <= abs(v) then 1 else 0 end
                    )[1]
                )],
                exponents -> case
                    when len(exponents) = 0 then 0.0
                    else list_transform(
                        [greatest(
                            list_min(exponents),
                            list_max(exponents) - 72 + cast(ceil(log2(len(kept))) as integer)
                        )],
                        low -> list_transform(
                            [list_sum(list_transform(
                                list_filter(kept, v -> v != 0),
                                v -> list_transform(
                                    [list_transform(
                                        [cast(floor(log2(abs(v))) as integer)],
                                        guess -> guess
                                            - case when pow(2.0, guess) > abs(v) then 1 else 0 end
                                            + case when pow(2.0, guess + 1) <= abs(v) then 1 else 0 end
                                    )[1]],
                                    e -> cast(sign(v) as hugeint) * case
                                        when e >= low
                                            then cast(cast(abs(v) * pow(2.0, 52 - e - (52 - e) // 2) * pow(2.0, (52 - e) // 2) as bigint) as hugeint)
                                                << (e - low)
                                        else cast(cast(abs(v) * pow(2.0, 52 - e - (52 - e) // 2) * pow(2.0, (52 - e) // 2) as bigint) as hugeint)
                                            >> (low - e)
                                    end
                                )[1]
                            ))],
                            total -> case
                                when total = 0 then 0.0
                                else list_transform(
                                    [list_transform(
                                        [cast(floor(log2(cast(abs(total) as double))) as integer) + 1],
                                        guess -> guess
                                            - case when (cast(1 as hugeint) << (guess - 1)) > abs(total) then 1 else 0 end
                                            + case when (cast(1 as hugeint) << guess) <= abs(total) then 1 else 0 end
                                    )[1]],
                                    bits -> sign(total) * case
                                        when bits <= 53 then cast(abs(total) as double)
                                        else list_transform(
                                            [abs(total) >> (bits - 53)],
                                            top -> cast(
                                                top + case
                                                    when abs(total) - (top << (bits - 53))
                                                        > (cast(1 as hugeint) << (bits - 54))
                                                        then 1
                                                    when abs(total) - (top << (bits - 53))
                                                        = (cast(1 as hugeint) << (bits - 54))
                                                        and top % 2 = 1
                                                        then 1
                                                    else 0
                                                end
                                            as double)
                                        )[1]
                                    end
                                    * pow(2.0, (greatest(bits, 53) - 53 + low - 52) // 2)
                                    * pow(2.0, greatest(bits, 53) - 53 + low - 52 - (greatest(bits, 53) - 53 + low - 52) // 2)
                                )[1]
                            end
                        )[1]
                    )[1]
                end
            )[1] / len(kept)
        end
    )[1]
{% endmacro %}
