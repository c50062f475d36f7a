-- One row per run and iteration with group counts (fct_group_summary): the
-- groups, early exits and shares charts. Early exits by reason exist only
-- when counted from rollouts; early_logged is the total a trainer log or a
-- tracker gave (no reasons).
select
    run_id,
    iteration,
    basis,
    groups_total,
    groups_kept,
    groups_filtered,
    filtered_share,
    rollouts,
    finished_early,
    early_exit_rate,
    early_answered,
    early_idk,
    early_error,
    early_other,
    case when basis <> 'rollouts' then finished_early end as early_logged,
    trainable_tokens,
    total_tokens,
    trainable_token_share,
    min_group_std,
    all_groups_filtered
from fct_group_summary
where
    list_contains($runs, run_id)
    and (
        basis is not null
        or trainable_token_share is not null
    )
order by 1, 2
