"""Exceptions raised by obs.runner. Each message is one line naming the file and the fix."""

from __future__ import annotations

from obs.core.errors import ObsError


class DbtError(ObsError):
    """dbt could not run (no project, a warehouse held by another process, a dbt error).

    The message is one line naming the file or command and what to do. Python
    callers get it as it is; the ``obs`` command prints it as its error line.
    """
