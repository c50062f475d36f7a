{% macro window_line_fits(points, extra_columns=[]) %}
{#- A select of the least-squares line of `points` (run_id, step, value)
    over each window of the model's `windows` CTE (run_id, first_step,
    last_step, span): its slope (regression_slope), r_squared, the means
    it passes through, how many points it fits, and its values at the
    window's first and last steps (start_value, end_value). extra_columns:
    aggregates of `points` to keep beside them. -#}
    select
        fits.*,
        fits.mean_value + fits.slope * (fits.first_step - fits.mean_step) as start_value,
        fits.mean_value + fits.slope * (fits.last_step - fits.mean_step) as end_value
    from (
        select
            windows.run_id,
            windows.first_step,
            windows.last_step,
            windows.span,
            {%- for column in extra_columns %}
            {{ column }},
            {%- endfor %}
            {{ regression_slope(points ~ '.value', points ~ '.step') }} as slope,
            power(corr({{ points }}.value, {{ points }}.step), 2) as r_squared,
            avg({{ points }}.value) as mean_value,
            avg({{ points }}.step) as mean_step,
            count(*) as points
        from windows
        inner join {{ points }}
            on
                windows.run_id = {{ points }}.run_id
                and {{ points }}.step between windows.first_step and windows.last_step
        group by 1, 2, 3, 4
    ) as fits
{%- endmacro %}
