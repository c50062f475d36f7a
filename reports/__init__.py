"""obs: dashboards and exports rendered from the marts."""

from obs.reports.dashboard import TrainingDashboard

__all__ = ["TrainingDashboard"]
