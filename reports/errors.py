"""Exceptions raised by obs.reports."""

from __future__ import annotations


class ReportError(Exception):
    """A report cannot be made (no warehouse, no such run, marts not built)."""
