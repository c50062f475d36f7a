"""obs: dashboards and exports rendered from the marts."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from obs.reports.dashboard import TrainingDashboard

__all__ = ["TrainingDashboard"]


def __getattr__(name: str) -> Any:
    # Imported on first use: the CLI must not pay for pandas and plotly on every command.
    if name == "TrainingDashboard":
        from obs.reports.dashboard import TrainingDashboard

        return TrainingDashboard
    raise AttributeError(f"module 'obs.reports' has no attribute {name!r}")
