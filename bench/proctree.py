"""Run a command and measure its wall time and the peak memory of its whole process tree.

``ru_maxrss`` (what ``wait4`` reports) is the largest resident set of any
single process among the child and the descendants it reaped, not their sum:
``obs ingest`` runs worker subprocesses beside the main one, so it understates
the tree. ``TreeSampler`` polls ``/proc`` every ``interval`` seconds (default
20 ms), finds the child and all its descendants (a scan of ``/proc/*/stat`` for
parent ids; this kernel has no ``/proc/<pid>/task/*/children``), and records
the peak of the SUM of their ``VmRSS``. A peak shorter than the interval can
be missed, so the figure is also raised to the largest ``VmHWM`` (the kernel's
own per-process high-water mark) seen: at the moment one process was at its
high-water mark the tree held at least that much.

``ru_maxrss`` is kept as a cross-check: the sampled tree figure should not be
below it (a shortfall means a peak in the last few ms of a process went
unseen). ``Measured.peak_tree_mb``, the figure the benchmark uses, is the
larger of the two, still a lower bound of the tree's true peak.

Linux starts a child's ``ru_maxrss`` at the high-water mark of the process
that spawned it (exec records the old address space's peak): a child of the
benchmark itself (which holds generated data, pyarrow and DuckDB) would report
the benchmark's own peak. So every measured command is started by a small
launcher process (``python proctree.py --serve``, standard library only, a
few MB) that waits for it and passes back its time, exit code and rusage.

Standard library only (no psutil).
"""

from __future__ import annotations

import atexit
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")


def _parents(first: int = 0) -> dict[int, list[int]]:
    """The children of live processes numbered ``first`` or above, keyed by parent pid.

    Pids are handed out in increasing order, so a process's descendants have
    larger pids than it (short of the pid counter wrapping around mid-run):
    skipping the older ones keeps a sample cheap.
    """
    children: dict[int, list[int]] = {}
    for entry in os.scandir(PROC):
        if not entry.name.isdigit() or int(entry.name) < first:
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:  # gone since the scan
            continue
        # pid (comm) state ppid ...: comm may hold spaces and parentheses
        fields = stat[stat.rindex(b")") + 2 :].split()
        children.setdefault(int(fields[1]), []).append(int(entry.name))
    return children


def tree(root: int) -> list[int]:
    """``root`` and every descendant of it alive now."""
    children = _parents(first=root)
    found, stack = [], [root]
    while stack:
        pid = stack.pop()
        found.append(pid)
        stack.extend(children.get(pid, ()))
    return found


def _memory_kb(pid: int) -> tuple[int, int]:
    """(VmRSS, VmHWM) in kB; (0, 0) for a zombie or a process already gone."""
    rss = hwm = 0
    try:
        with open(f"/proc/{pid}/status", "rb") as handle:
            for line in handle:
                if line.startswith(b"VmRSS:"):
                    rss = int(line.split()[1])
                elif line.startswith(b"VmHWM:"):
                    hwm = int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return rss, hwm


class TreeSampler(threading.Thread):
    """Polls the tree under ``pid`` until ``stop()``; ``peak_kb`` is the largest sum seen."""

    def __init__(self, pid: int, interval: float = 0.02) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.interval = interval
        self.peak_sum_kb = 0  # the largest sum of VmRSS over one sample
        self.peak_hwm_kb = 0  # the largest single VmHWM seen
        self.samples = 0
        self.processes: set[int] = set()
        self._done = threading.Event()

    @property
    def peak_kb(self) -> int:
        return max(self.peak_sum_kb, self.peak_hwm_kb)

    def sample(self) -> None:
        total = 0
        for pid in tree(self.pid):
            rss, hwm = _memory_kb(pid)
            total += rss
            self.peak_hwm_kb = max(self.peak_hwm_kb, hwm)
            if rss:
                self.processes.add(pid)
        self.peak_sum_kb = max(self.peak_sum_kb, total)
        self.samples += 1

    def run(self) -> None:
        while not self._done.is_set():
            self.sample()
            self._done.wait(self.interval)

    def stop(self) -> None:
        self._done.set()
        self.join()


@dataclass
class Measured:
    seconds: float
    returncode: int
    sampled_mb: float  # peak of the sum of RSS over the process tree, as sampled
    ru_maxrss_mb: float  # wait4's ru_maxrss: the largest single process
    samples: int
    processes: int  # distinct processes seen in the tree

    @property
    def peak_tree_mb(self) -> float:
        """The tree's peak: the sampled sum, never below the largest single process."""
        return max(self.sampled_mb, self.ru_maxrss_mb)


def serve() -> None:
    """The launcher: one JSON request a line on stdin, two JSON answers a request on stdout.

    Request ``{"command": [...], "log": path, "env": {...} or null}``; answers
    ``{"pid": n}`` once started, then ``{"returncode", "seconds", "ru_maxrss_kb"}``.
    """
    import json
    import sys

    for line in sys.stdin:
        request = json.loads(line)
        command = request["command"]
        env = request["env"] if request["env"] is not None else dict(os.environ)
        log = os.open(request["log"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        actions = [
            (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
            (os.POSIX_SPAWN_DUP2, log, 1),
            (os.POSIX_SPAWN_DUP2, log, 2),
        ]
        started = time.perf_counter()
        try:
            pid = os.posix_spawnp(command[0], command, env, file_actions=actions)
        except OSError as error:
            os.write(log, f"launcher: {error}\n".encode())
            os.close(log)
            print(json.dumps({"pid": None}), flush=True)
            print(json.dumps({"returncode": 127, "seconds": 0.0, "ru_maxrss_kb": 0}), flush=True)
            continue
        os.close(log)
        print(json.dumps({"pid": pid}), flush=True)
        _, status, usage = os.wait4(pid, 0)
        seconds = time.perf_counter() - started
        answer = {
            "returncode": os.waitstatus_to_exitcode(status),
            "seconds": seconds,
            "ru_maxrss_kb": usage.ru_maxrss,
        }
        print(json.dumps(answer), flush=True)


class Launcher:
    """The bench's end of the launcher process (started on first use, ends with the bench)."""

    _process: subprocess.Popen[str] | None = None

    @classmethod
    def get(cls) -> subprocess.Popen[str]:
        if cls._process is None or cls._process.poll() is not None:
            cls._process = subprocess.Popen(
                [sys.executable, "-I", "-S", __file__, "--serve"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                bufsize=1,
            )
            atexit.register(cls.close)
        return cls._process

    @classmethod
    def close(cls) -> None:
        if cls._process is not None and cls._process.stdin is not None:
            cls._process.stdin.close()
            cls._process.wait()
            cls._process = None


def run(
    command: Sequence[str],
    *,
    log: Path,
    env: Mapping[str, str] | None = None,
) -> Measured:
    """Run ``command`` through the launcher (stdout, stderr appended to ``log``); measure it."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as sink:
        sink.write(f"\n$ {' '.join(command)}\n".encode())
    launcher = Launcher.get()
    assert launcher.stdin is not None and launcher.stdout is not None
    request = {"command": list(command), "log": str(log), "env": None if env is None else dict(env)}
    launcher.stdin.write(json.dumps(request) + "\n")
    launcher.stdin.flush()
    pid = json.loads(launcher.stdout.readline())["pid"]
    sampler = TreeSampler(pid) if pid is not None else None
    if sampler is not None:
        sampler.start()
    done = json.loads(launcher.stdout.readline())
    if sampler is not None:
        sampler.stop()
    return Measured(
        seconds=done["seconds"],
        returncode=done["returncode"],
        sampled_mb=sampler.peak_kb / 1024 if sampler else 0.0,
        ru_maxrss_mb=done["ru_maxrss_kb"] / 1024,
        samples=sampler.samples if sampler else 0,
        processes=len(sampler.processes) if sampler else 0,
    )


if __name__ == "__main__" and sys.argv[1:] == ["--serve"]:
    serve()
