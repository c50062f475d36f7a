"""Turn package exceptions into one-line click errors (tracebacks only with --debug)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import click
from obs.core.errors import ObsError


@contextmanager
def friendly_errors(debug: bool) -> Iterator[None]:
    try:
        yield
    except ObsError as exc:
        if debug:
            raise
        raise click.ClickException(str(exc)) from exc
