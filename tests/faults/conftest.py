"""Helpers for the fault suite: dumps written line by line, the lake counted back.

These tests use real processes where the fault is a process's (kill -9, a build
or a writer running beside an ingest) and count rows landed against rows written.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import lake_query

OBS = str(Path(sys.executable).parent / "obs")


def line(prompt: str, score: object = 1.0, **fields: object) -> str:
    return json.dumps({"input": prompt, "output": f"answer to {prompt}", "score": score, **fields})


def write_dump(path: Path, lines: list[str], tail: str = "") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{x}\n" for x in lines) + tail)
    return path


def dump_folder(folder: Path, iterations: int, prompts: int, samples: int) -> int:
    """``iterations`` dumps of ``prompts`` x ``samples`` rollouts; returns the rollouts written."""
    for iteration in range(iterations):
        rows = [
            line(f"prompt {p}", (p + s + iteration) % 3 / 2, step=iteration)
            for p in range(prompts)
            for s in range(samples)
        ]
        write_dump(folder / f"{iteration}.jsonl", rows)
    return iterations * prompts * samples


def assert_lake_sound(lake: Path, expected_rows: int) -> None:
    """Exactly ``expected_rows`` rollouts, keys unique, samples numbered 0..n-1 per group."""
    [(rows, keys)] = lake_query(
        lake,
        "rollouts",
        "select count(*), count(distinct (run_id, iteration, prompt_hash, sample_idx)) from t",
    )
    assert (rows, keys) == (expected_rows, expected_rows)
    gaps = lake_query(
        lake,
        "rollouts",
        "select run_id, iteration, prompt_hash from t group by all "
        "having max(sample_idx) != count(*) - 1 or min(sample_idx) != 0",
    )
    assert gaps == []
    staging = lake / "_staging"
    assert not staging.exists() or list(staging.iterdir()) == []
    assert [p for p in lake.rglob("*") if p.name.endswith(".tmp")] == []


def obs(
    lake: Path, warehouse: Path, *args: object, check: bool = True
) -> subprocess.CompletedProcess:
    """The real `obs` command in a process of its own."""
    command = [OBS, "--lake", str(lake), "--warehouse", str(warehouse), *map(str, args)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    if check:
        assert done.returncode == 0, done.stderr
    return done
