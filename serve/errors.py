"""Exceptions raised by obs.serve."""

from __future__ import annotations

from obs.core.errors import ObsError


class ServeError(ObsError):
    """The server cannot start or a page cannot be drawn (no warehouse, a busy port)."""
