"""Worker processes that read files while the main process decides and publishes.

Each worker is ``python -m obs.ingest.workers``: it reads pickled
``(function, argument)`` frames on stdin and writes pickled results on stdout.
Plain subprocesses, not ``multiprocessing``: a worker never imports the
caller's ``__main__`` (so a script without an ``if __name__ == "__main__"``
guard cannot start a second ingest), and a worker whose parent dies reads EOF
and exits.

The caller reads too: before it waits on a job it runs one no worker has taken
yet (``run_here``), with the job's argument as it is, unpickled. The first files
are read while the workers still start, and the caller's process, which would
only wait, is one of the readers.
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


class _Task:
    """A submitted job; taken once, by a worker's thread or by ``run_here``."""

    __slots__ = ("argument", "function", "future", "taken")

    def __init__(self, function: Callable[[Any], Any], argument: Any, future: Future[Any]):
        self.function = function
        self.argument = argument
        self.future = future
        self.taken = False


class WorkerPool:
    """``submit(function, argument) -> Future`` over a few worker processes.

    A worker that dies fails the job it had (the caller reads that file itself)
    and is started again, up to ``RESTARTS`` times; past that its thread fails
    every job it takes at once, so nothing ever waits on a dead process.
    """

    RESTARTS = 3

    def __init__(self, count: int, taken: Callable[[Any], None] | None = None) -> None:
        """``taken(argument)`` is called when a worker takes a job (the caller won't run it)."""
        self._taken = taken
        self._jobs: queue.Queue[_Task | None] = queue.Queue()
        self._waiting: dict[Future[Any], _Task] = {}
        self._processes: list[subprocess.Popen[bytes]] = []
        self._lock = threading.Lock()
        self._threads = [threading.Thread(target=self._serve, daemon=True) for _ in range(count)]
        for thread in self._threads:
            thread.start()

    def _start(self) -> subprocess.Popen[bytes]:
        process = subprocess.Popen(
            [sys.executable, "-m", "obs.ingest.workers"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        with self._lock:
            self._processes.append(process)
        return process

    def _start_ready(self, restarts: int) -> tuple[subprocess.Popen[bytes] | None, int]:
        """A started worker that said it is ready (warmed up), and the restarts it took.

        A thread takes no job before its worker is ready: until then the
        caller may run the job itself.
        """
        while restarts <= self.RESTARTS:
            process = self._start()
            assert process.stdout is not None
            try:
                _receive(process.stdout)
            except (EOFError, OSError):
                _stop(process)
                restarts += 1
                continue
            return process, restarts
        return None, restarts

    def _serve(self) -> None:
        process, restarts = self._start_ready(0)
        while True:
            task = self._jobs.get()
            if task is None:
                return
            if not self._take(task):
                continue  # run by the caller itself
            function, argument, future = task.function, task.argument, task.future
            if not future.set_running_or_notify_cancel():
                continue
            if self._taken is not None:
                self._taken(argument)
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
                process, restarts = self._start_ready(restarts + 1)
                continue
            if ok:
                future.set_result(value)
            else:
                future.set_exception(value)

    def submit(self, function: Callable[[Any], Any], argument: Any) -> Future[Any]:
        future: Future[Any] = Future()
        task = _Task(function, argument, future)
        with self._lock:
            self._waiting[future] = task
        self._jobs.put(task)
        return future

    def _take(self, task: _Task) -> bool:
        with self._lock:
            if task.taken:
                return False
            task.taken = True
            self._waiting.pop(task.future, None)
            return True

    def run_here(self, future: Future[Any]) -> None:
        """Before waiting on ``future``, run a job in this process (as it is, unpickled).

        ``future``'s own job when no worker has taken it yet (the workers are
        still starting, or busy); else the oldest job no worker has taken,
        when another is left for the next worker that comes free.
        """
        with self._lock:
            task = self._waiting.get(future)
            if task is None and len(self._waiting) > 1:
                task = next(iter(self._waiting.values()))
        if task is None or not self._take(task):
            return
        if not task.future.set_running_or_notify_cancel():
            return
        try:
            result = task.function(task.argument)
        except BaseException as exc:  # raised by the caller, as a worker's would be
            task.future.set_exception(exc)
        else:
            task.future.set_result(result)

    def shutdown(self) -> None:
        """Cancel jobs not started, let running ones finish, stop the workers."""
        while True:
            try:
                item = self._jobs.get_nowait()
            except queue.Empty:
                break
            if item is not None and self._take(item):
                item.future.cancel()
        for _ in self._threads:
            self._jobs.put(None)
        for thread in self._threads:
            thread.join()
        with self._lock:
            for process in self._processes:
                # Every thread has returned, so no worker holds a job: ending
                # them at once loses nothing and spares their interpreter teardown.
                _stop(process, at_once=True)


def _stop(process: subprocess.Popen[bytes], *, at_once: bool = False) -> None:
    """Close a worker's pipes (it then exits); kill it if it does not, or ``at_once``."""
    for stream in (process.stdin, process.stdout):
        if stream is not None:
            with contextlib.suppress(OSError):
                stream.close()
    if at_once:
        process.kill()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _warm_up() -> None:
    """Import and start what every job needs while the caller plans its first file.

    Nothing here may convert a Python value to arrow (``pa.array``): pyarrow
    would import pandas (0.3 s), which reading JSON lines never needs.
    """
    import obs.ingest.rollouts  # noqa: F401  (the builders jobs name)
    import pyarrow as pa
    import pyarrow.json as pa_json

    pa_json.read_json(pa.BufferReader(b'{"a": 1}\n'))


def main() -> None:
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    # Nothing else may write to the result stream.
    sys.stdout = sys.stderr
    _warm_up()
    _send(stdout, (True, "ready"))
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
