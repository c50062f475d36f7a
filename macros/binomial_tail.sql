{% macro binomial_tail(successes, trials, rate) %}
{#- The chance of `successes` or more successes in `trials` independent
    trials (SQL integers, successes <= trials) of chance `rate` (strictly
    between 0 and 1): the binomial terms from `successes` to `trials`,
    summed in order. -#}
    {{ return(adapter.dispatch('binomial_tail', 'obs')(successes, trials, rate)) }}
{% endmacro %}

{#- Spark has no lgamma: ln C(n, j) is summed from its factors,
    ln((n - j + i) / i) for i from 1 to j (the same number to about 1e-13
    of it). -#}
{% macro default__binomial_tail(successes, trials, rate) %}
    aggregate(
        transform(
            sequence({{ successes }}, {{ trials }}),
            j -> exp(
                case
                    when j = 0 then cast(0 as double)
                    else aggregate(
                        sequence(1, j),
                        cast(0 as double),
                        (log_choose, i) -> log_choose + ln({{ trials }} - j + i) - ln(i)
                    )
                end
                + j * ln({{ rate }}) + ({{ trials }} - j) * ln(1 - {{ rate }})
            )
        ),
        cast(0 as double),
        (tail, term) -> tail + term
    )
{% endmacro %}

{% macro duckdb__binomial_tail(successes, trials, rate) %}
    list_sum(
        list_transform(
            range({{ successes }}, {{ trials }} + 1),
            j -> exp(
                lgamma({{ trials }} + 1) - lgamma(j + 1)
                - lgamma({{ trials }} - j + 1)
                + j * ln({{ rate }}) + ({{ trials }} - j) * ln(1 - {{ rate }})
            )
        )
    )
{% endmacro %}
