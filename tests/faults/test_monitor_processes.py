"""The reward monitor's folder under hostile processes: kill -9 mid-ingest, and memory.

Real processes: `obs ingest monitoring` in a process of its own, killed as soon
as it has staged a part, then run again; and a thousand steps of 2,048 samples
landing within a bounded peak of resident memory (wait4).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from obs.monitor import RewardTracker

from tests.conftest import kill_when, lake_query

OBS = str(Path(sys.executable).parent / "obs")


def _monitor_folder(folder: Path, steps: int, seed: int) -> RewardTracker:
    """A reward monitor's folder: ``steps`` steps of four functions x 512 samples."""
    tracker = RewardTracker(["a", "b", "c", "d"], folder, track_distributions=True)
    rng = np.random.default_rng(seed)
    for step in range(steps):
        tracker.track_step(step, {fn: rng.random(512) for fn in "abcd"})
    return tracker


@pytest.mark.slow
def test_kill_9_mid_ingest_leaves_no_half_part(tmp_path: Path) -> None:
    folder, lake = tmp_path / "monitoring_data", tmp_path / "lake"
    _monitor_folder(folder, steps=200, seed=3)
    command = [OBS, "--lake", str(lake), "ingest", "monitoring", str(folder), "--run", "r", "-q"]
    staged = lake / "_staging"
    killed = kill_when(command, lambda: bool(list(staged.glob("*/reward_samples.*/part.parquet"))))
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    [(rows, keys)] = lake_query(
        lake,
        "reward_samples",
        "select count(*), count(distinct (step, reward_function, sample_idx)) from t",
    )
    assert (rows, keys) == (200 * 4 * 512, 200 * 4 * 512)
    assert not list((lake / "_staging").glob("*/*"))
    assert not [p for p in lake.rglob("*") if p.name.endswith(".tmp")]
    assert killed, "the ingest finished before it could be killed"


@pytest.mark.slow
def test_a_thousand_steps_of_2048_samples_land_in_bounded_memory(tmp_path: Path) -> None:
    folder, lake = tmp_path / "monitoring_data", tmp_path / "lake"
    _monitor_folder(folder, steps=1000, seed=5).close()
    # the ingest in a process of its own, its peak resident memory measured by wait4
    code = (
        "import resource, subprocess, sys; "
        "done = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
        "print(done.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); "
        "print(done.stdout + done.stderr)"
    )
    command = [OBS, "--lake", str(lake), "ingest", "monitoring", str(folder), "--run", "r"]
    done = subprocess.run(
        [sys.executable, "-c", code, *command], capture_output=True, text=True, timeout=300
    )
    status, peak_kb = map(int, done.stdout.split("\n")[0].split())
    assert status == 0, done.stdout
    assert "2,048,000 reward samples landed" in done.stdout
    assert peak_kb < 600 * 1024, f"peak {peak_kb // 1024} MB"
    [(rows,)] = lake_query(lake, "reward_samples", "select count(*) from t")
    assert rows == 2_048_000
