-- The build's thresholds the dashboard draws (one row).
select
    pass_threshold,
    success,
    success_kind,
    success_function,
    success_threshold,
    plateau_variance_threshold,
    fast_learning_iterations,
    sample_efficiency_good_score,
    stuck_cell_min_samples
from rpt_dashboard_settings
