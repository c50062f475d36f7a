"""Worker processes that read files while the main process decides and publishes.

Each worker is ``python -m obs.ingest._workers``: it reads pickled
``(function, argument)`` frames on stdin and writes pickled results on stdout.
Plain subprocesses, not ``multiprocessing``: a worker never imports the
caller's ``__main__`` (so a script without an ``if __name__ == "__main__"``
guard cannot start a second ingest), and a worker whose parent dies reads EOF
and exits.
"""

from __future__ import annotations

import contextlib
import pickle
import queue
import struct
import subprocess
import sys
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import IO, Any

_HEADER = struct.Struct("<Q")


def _send(stream: IO[bytes], value: object) -> None:
    payload = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_HEADER.pack(len(payload)))
    stream.write(payload)
    stream.flush()


def _receive(stream: IO[bytes]) -> Any:
    header = stream.read(_HEADER.size)
    if len(header) < _HEADER.size:
        raise EOFError
    (size,) = _HEADER.unpack(header)
    payload = stream.read(size)
    if len(payload) < size:
        raise EOFError
    return pickle.loads(payload)


class WorkerDied(RuntimeError):
    """The process running a job ended without answering (killed, out of memory)."""


class WorkerPool:
    """``submit(function, argument) -> Future`` over a few worker processes.

    A worker that dies fails the job it had (the caller reads that file itself)
    and is started again, up to ``RESTARTS`` times; past that its thread fails
    every job it takes at once, so nothing ever waits on a dead process.
    """

    RESTARTS = 3

    def __init__(self, count: int) -> None:
        self._jobs: queue.Queue[tuple[Callable[[Any], Any], Any, Future[Any]] | None] = (
            queue.Queue()
        )
        self._processes: list[subprocess.Popen[bytes]] = []
        self._lock = threading.Lock()
        self._threads = [threading.Thread(target=self._serve, daemon=True) for _ in range(count)]
        for thread in self._threads:
            thread.start()

    def _start(self) -> subprocess.Popen[bytes]:
        process = subprocess.Popen(
            [sys.executable, "-m", "obs.ingest._workers"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        with self._lock:
            self._processes.append(process)
        return process

    def _serve(self) -> None:
        process: subprocess.Popen[bytes] | None = self._start()
        restarts = 0
        while True:
            item = self._jobs.get()
            if item is None:
                return
            function, argument, future = item
            if not future.set_running_or_notify_cancel():
                continue
            if process is None:
                future.set_exception(WorkerDied("no ingest worker process left"))
                continue
            assert process.stdin is not None and process.stdout is not None
            try:
                _send(process.stdin, (function, argument))
                ok, value = _receive(process.stdout)
            except (EOFError, OSError) as exc:
                future.set_exception(WorkerDied(f"an ingest worker process died ({exc!r})"))
                _stop(process)
                restarts += 1
                process = self._start() if restarts <= self.RESTARTS else None
                continue
            if ok:
                future.set_result(value)
            else:
                future.set_exception(value)

    def submit(self, function: Callable[[Any], Any], argument: Any) -> Future[Any]:
        future: Future[Any] = Future()
        self._jobs.put((function, argument, future))
        return future

    def shutdown(self) -> None:
        """Cancel jobs not started, let running ones finish, stop the workers."""
        while True:
            try:
                item = self._jobs.get_nowait()
            except queue.Empty:
                break
            if item is not None:
                item[2].cancel()
        for _ in self._threads:
            self._jobs.put(None)
        for thread in self._threads:
            thread.join()
        with self._lock:
            for process in self._processes:
                _stop(process)


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Close a worker's pipes (it then exits); kill it if it does not."""
    for stream in (process.stdin, process.stdout):
        if stream is not None:
            with contextlib.suppress(OSError):
                stream.close()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _warm_up() -> None:
    """Import and start what every job needs while the caller plans its first file."""
    import duckdb
    import obs.ingest.rollouts  # noqa: F401  (the builders jobs name)
    import pyarrow as pa

    pa.array([1], pa.int64())
    duckdb.connect().execute("select to_json({'a': 1})").fetchall()


def main() -> None:
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    # Nothing else may write to the result stream.
    sys.stdout = sys.stderr
    _warm_up()
    while True:
        try:
            function, argument = _receive(stdin)
        except EOFError:
            return
        try:
            result: tuple[bool, Any] = (True, function(argument))
        except BaseException as exc:  # sent back and raised by the caller
            result = (False, exc)
        _send(stdout, result)


if __name__ == "__main__":
    main()
