"""How the server shares the warehouse with builds: one writer, many readers, no half-built page.

DuckDB lets one process write a database file, and a process that holds it
open read-only keeps every writer out. So the server never keeps the
warehouse open:

* a page opens it read-only, runs its queries and closes it (``Access.read``).
  If a build in another process (``obs build``, ``obs watch``) holds the file,
  the page waits for the build to end, retrying every 50 ms (up to
  ``WAIT_SECONDS``): it never sees a half-built state. A build claims the
  warehouse before it waits for readers (``obs.runner.claim``), and a page
  does not open the file while it is claimed, so a build waits at most for
  the pages already drawing, however many keep coming;
* while the server follows a run itself, its rounds build in this process:
  a round takes the ``Gate`` for writing (it waits for the pages being
  drawn, and pages wait for it), so here too a page sees the warehouse
  before a round or after it, never during.

``version()`` tells pages that something changed without opening the
warehouse: the size and time of the warehouse file and of the build record
obs writes at the end of every build. While the server follows a run, its
rounds publish the version (``publish()``, at the end of a round that
changed something), so pages never see one from the middle of a round, and
whoever listens (the pages' event streams) hears of it at once.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from obs.core.places import no_warehouse
from obs.runner.claim import claimed
from obs.serve.errors import ServeError

T = TypeVar("T")

STOPPING = "obs serve is stopping; start it again to see this page"
WAIT_SECONDS = 60.0  # a page waits this long for another process's build
RETRY_SECONDS = 0.05


class Gate:
    """A readers-writer lock that prefers the writer (a round is never starved by pages)."""

    def __init__(self) -> None:
        self._lock = threading.Condition()
        self._readers = 0
        self._writing = False
        self._waiting_writers = 0

    @contextlib.contextmanager
    def reading(self) -> Iterator[None]:
        with self._lock:
            while self._writing or self._waiting_writers:
                self._lock.wait()
            self._readers += 1
        try:
            yield
        finally:
            with self._lock:
                self._readers -= 1
                self._lock.notify_all()

    @contextlib.contextmanager
    def writing(self) -> Iterator[None]:
        with self._lock:
            self._waiting_writers += 1
            while self._writing or self._readers:
                self._lock.wait()
            self._waiting_writers -= 1
            self._writing = True
        try:
            yield
        finally:
            with self._lock:
                self._writing = False
                self._lock.notify_all()


class Access:
    """Read-only access to one warehouse, shared with builds (module docstring)."""

    def __init__(self, warehouse: Path, lake: Path) -> None:
        self.warehouse = warehouse
        self.lake = lake
        self.gate = Gate()
        # While following: the version the last round published (None: read the files).
        self._published: str | None = None
        self._listeners: list[Callable[[], None]] = []
        # Set when the server stops: waiting pages give up, running queries are interrupted.
        self.stopping = threading.Event()
        self._open_connections: set[Any] = set()
        self._connections_lock = threading.Lock()

    def _open(self) -> Any:
        import duckdb

        deadline = time.monotonic() + WAIT_SECONDS
        while True:
            if self.stopping.is_set():
                raise ServeError(STOPPING)
            if not self.warehouse.exists():
                raise ServeError(
                    no_warehouse(self.warehouse, "run `obs build` (or `obs demo`) first")
                )
            if claimed(self.warehouse):
                # a build is waiting for the file or writing it: let it have it first
                if time.monotonic() > deadline:
                    raise ServeError(
                        f"{self.warehouse}: a build has held it for {WAIT_SECONDS:.0f} s; "
                        "this page loads again by itself when it ends"
                    )
                time.sleep(RETRY_SECONDS)
                continue
            try:
                return duckdb.connect(str(self.warehouse), read_only=True)
            except duckdb.IOException as exc:
                if "lock" not in str(exc).lower() or time.monotonic() > deadline:
                    raise ServeError(f"{self.warehouse}: {str(exc).splitlines()[0]}") from exc
            time.sleep(RETRY_SECONDS)

    def read(self, work: Callable[[Any], T]) -> T:
        """``work(connection)`` on a read-only connection opened for it and closed after.
        Raises ServeError when the warehouse cannot be had, or the server stops."""
        import duckdb

        with self.gate.reading():
            con = self._open()
            with self._connections_lock:
                self._open_connections.add(con)
            try:
                return work(con)
            except duckdb.Error as exc:
                if self.stopping.is_set():
                    raise ServeError(STOPPING) from exc
                raise
            finally:
                with self._connections_lock:
                    self._open_connections.discard(con)
                con.close()

    def stop(self) -> None:
        """The server stops: pages waiting for the warehouse give up, and queries under
        way are interrupted (each page then gets the one-line "stopping" page)."""
        self.stopping.set()
        with self._connections_lock:
            running = list(self._open_connections)
        for con in running:
            with contextlib.suppress(Exception):
                con.interrupt()

    def version(self) -> str:
        """Changes whenever the warehouse may have: a build elsewhere, or (while this
        process follows a run) a round that published."""
        published = self._published
        return published if published is not None else self.stamps()

    def publish(self) -> None:
        """A round of this process ended: its version is the pages' from now on (only
        rounds publish once one has), and the listeners hear of it when it is new."""
        stamps = self.stamps()
        if stamps == self._published:
            return
        self._published = stamps
        for listener in list(self._listeners):
            listener()

    def listen(self, listener: Callable[[], None]) -> None:
        """Call ``listener()`` (from the publishing thread) whenever a version is published."""
        self._listeners.append(listener)

    def stamps(self) -> str:
        """Size and modification time of the warehouse file and of its build record."""
        stamps = []
        for path in (self.warehouse, _state_file(self.warehouse)):
            try:
                stat = path.stat()
            except OSError:
                stamps.append("-")
                continue
            stamps.append(f"{stat.st_mtime_ns}.{stat.st_size}")
        return "-".join(stamps)


def _state_file(warehouse: Path) -> Path:
    """The build record obs writes at the end of every build of ``warehouse``."""
    from obs.runner.build_state import STATE_FILE
    from obs.runner.dbt import state_dir

    return state_dir(warehouse) / STATE_FILE
