"""Exceptions raised by obs.reports."""

from __future__ import annotations

from obs.core.errors import ObsError


class ReportError(ObsError):
    """A report cannot be made (no warehouse, no such run, marts not built)."""
