"""A build's claim on the warehouse, so steady readers cannot starve it.

DuckDB lets a process write the file only while no other process holds it
open, and a build waits ``LOCK_WAIT_SECONDS`` for readers to let go. Readers
that open the file one after another (the pages of ``obs serve``) would keep
it held forever, so a build first claims the warehouse: it holds an
exclusive ``flock`` on ``<warehouse>.dbt/build.claim`` from before its wait
until it is done, and a reader that honours the claim (``claimed``) waits
before opening the file. A claim dies with its process (the kernel drops the
lock), so a killed build never leaves readers waiting.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Iterator
from pathlib import Path

from obs.runner.dbt import state_dir

CLAIM_FILE = "build.claim"
# A reader looking at the claim holds the file for microseconds; a build trying to
# claim it retries this long before building unclaimed (another build has it).
CLAIM_TRIES_SECONDS = 0.5


def claim_path(warehouse: Path) -> Path:
    return state_dir(warehouse) / CLAIM_FILE


@contextlib.contextmanager
def claiming(warehouse: Path) -> Iterator[bool]:
    """Hold the warehouse's claim while the block runs; yields whether it was got (False
    when another build holds it, or the folder cannot be written: the build goes on)."""
    path = claim_path(warehouse)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:
        yield False
        return
    try:
        deadline = time.monotonic() + CLAIM_TRIES_SECONDS
        held = False
        while not held:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                held = True
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    break
                time.sleep(0.01)
        yield held
    finally:
        os.close(handle)  # drops the lock


def claimed(warehouse: Path) -> bool:
    """Whether a build (in any process) holds the warehouse's claim now."""
    try:
        handle = os.open(claim_path(warehouse), os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(handle)
    return False
