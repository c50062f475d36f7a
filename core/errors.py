"""The base of obs's own errors."""

from __future__ import annotations


class ObsError(Exception):
    """An error obs raises on purpose: its message is one line naming the file or
    the argument at fault and what to do. ``obs.ingest``, ``obs.runner`` and
    ``obs.reports`` each raise a subclass of their own; the command line prints
    any of them as its one-line error."""
