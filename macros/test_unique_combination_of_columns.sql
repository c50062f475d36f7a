{% test unique_combination_of_columns(model, combination_of_columns) %}
{% if not combination_of_columns %}
    {{ exceptions.raise_compiler_error("unique_combination_of_columns needs at least one column") }}
{% endif %}
select
    {{ combination_of_columns | join(', ') }},
    count(*) as n_rows
from {{ model }}
group by {{ combination_of_columns | join(', ') }}
having count(*) > 1
{% endtest %}
