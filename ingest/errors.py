"""Exceptions raised by obs.ingest. Each message is one line naming the file and the fix."""

from __future__ import annotations

from obs.core.errors import ObsError


class IngestError(ObsError):
    """Input that cannot be ingested at all (missing path, unknown format, ...)."""
