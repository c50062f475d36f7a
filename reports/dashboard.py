"""The programmatic API: ``TrainingDashboard(warehouse=..., run=...)``."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

import pandas as pd
import plotly.graph_objects as go
from obs.reports.figures.base import themed
from obs.reports.render import Dashboard, load_dashboard, render_dashboard
from obs.reports.sql import frame
from obs.reports.summary import format_summary, load_summary
from obs.reports.warehouse import connect


def _themed(charts: dict[str, go.Figure]) -> dict[str, go.Figure]:
    """Copies with the dashboards' look set, ready for ``fig.show()``."""
    return {name: themed(go.Figure(figure)) for name, figure in charts.items()}


class TrainingDashboard:
    """One run's marts as DataFrames, its charts as figures, and the combined page.

    >>> dashboard = TrainingDashboard(warehouse="warehouse/obs.duckdb", run="demo")
    >>> dashboard.print_summary_statistics()
    >>> figures = dashboard.generate_all_charts()      # name -> plotly Figure
    >>> compared = TrainingDashboard(warehouse="warehouse/obs.duckdb").generate_comparison_charts()
    >>> dashboard.save_combined_dashboard("dashboard.html")
    >>> dashboard.save_reward_dashboard("rewards.html")  # reward monitoring alone
    >>> dashboard.save_agent_dashboard("agent.html")  # a multi-turn agent's run alone
    """

    def __init__(
        self,
        warehouse: str | Path = "warehouse/obs.duckdb",
        run: str | None = None,
        iterations: Sequence[int] | None = None,
    ) -> None:
        self.warehouse = Path(warehouse)
        self.run = run
        self.iterations = list(iterations) if iterations else None
        self._dashboard: Dashboard | None = None

    def _table(self, query: str) -> pd.DataFrame:
        """Query ``query``'s rows, of the chosen run (of every run when none is)."""
        con = connect(self.warehouse)
        try:
            return frame(con, query, {"run": self.run})
        finally:
            con.close()

    @property
    def prompt_metrics(self) -> pd.DataFrame:
        """fct_prompt_iteration: one row per run, iteration and prompt."""
        return self._table("api_prompt_iteration")

    @property
    def learning_dynamics(self) -> pd.DataFrame:
        """fct_prompt_learning: one row per run and prompt."""
        return self._table("api_prompt_learning")

    @property
    def upsampling_data(self) -> pd.DataFrame:
        """fct_upsampling_candidates, best candidate first."""
        return self._table("api_upsampling_candidates")

    @property
    def reward_steps(self) -> pd.DataFrame:
        """fct_reward_steps: one row per run and step with reward data."""
        return self._table("api_reward_steps")

    def print_summary_statistics(self, file: TextIO | None = None) -> None:
        """Print the run summary (as ``obs summary`` does)."""
        stream = file or sys.stdout
        for run in load_summary(self.warehouse, self.run):
            stream.write(format_summary(run))

    def _load(self) -> Dashboard:
        if self._dashboard is None:
            runs = [self.run] if self.run else None
            self._dashboard = load_dashboard(self.warehouse, runs, self.iterations)
        return self._dashboard

    def generate_all_charts(self) -> dict[str, go.Figure]:
        """The fourteen figures, by chart name (the first run's, if several)."""
        return _themed(self._load().runs[0].figures)

    def generate_comparison_charts(self) -> dict[str, go.Figure]:
        """The run comparison figures, by chart name: empty unless two or more of the
        chosen runs have rollouts (``run=None`` chooses every run)."""
        return _themed(self._load().comparison)

    def save_combined_dashboard(self, path: str | Path, plotlyjs: str = "inline") -> Path:
        """Write the self-contained HTML dashboard and return its path."""
        return render_dashboard(self._load(), Path(path), plotlyjs)

    def generate_reward_charts(self) -> dict[str, go.Figure]:
        """The reward monitoring figures, by name (the first run with reward data, if several).

        Empty when no chosen run has reward data.
        """
        from obs.reports.reward_dashboard import load_reward_dashboard

        rewards = load_reward_dashboard(self.warehouse, [self.run] if self.run else None)
        return _themed(rewards.runs[0].figures) if rewards.runs else {}

    def generate_agent_charts(self) -> dict[str, go.Figure]:
        """The agentic run figures, by name (the first run with agent data, if several).

        Empty when no chosen run has agent data.
        """
        from obs.reports.agent_dashboard import load_agent_dashboard

        agent = load_agent_dashboard(self.warehouse, [self.run] if self.run else None)
        return _themed(agent.runs[0].figures) if agent.runs else {}

    def save_agent_dashboard(self, path: str | Path, plotlyjs: str = "inline") -> Path:
        """Write the agentic run page (a "no agentic data" page when there is none)."""
        from obs.reports.agent_dashboard import load_agent_dashboard, render_agent_dashboard

        agent = load_agent_dashboard(self.warehouse, [self.run] if self.run else None)
        return render_agent_dashboard(agent, Path(path), plotlyjs)

    def save_reward_dashboard(self, path: str | Path, plotlyjs: str = "inline") -> Path:
        """Write the reward monitoring page (a "no reward data" page when there is none)."""
        from obs.reports.reward_dashboard import load_reward_dashboard, render_reward_dashboard

        rewards = load_reward_dashboard(self.warehouse, [self.run] if self.run else None)
        return render_reward_dashboard(rewards, Path(path), plotlyjs)
