"""Two bench runs side by side: this commit's figures beside another commit's.

A figure from another session is not comparable (another load, another
machine state): run the bench on both commits in one session, each into its
own ``--out`` folder, then print them side by side:

    git worktree add /tmp/base BASE && (cd /tmp/base && make dev)
    /tmp/base/.venv/bin/python /tmp/base/bench/run.py --out /tmp/bench-base ...
    .venv/bin/python bench/run.py --out /tmp/bench-head ... --beside /tmp/bench-base

or ``python bench/beside.py /tmp/bench-head /tmp/bench-base`` afterwards. The
stages both runs measured are listed with their seconds and peak memory, and
the slowest nodes of each cold build (``obs build`` on the fresh warehouse;
models run two at a time, so their seconds overlap) with the other's seconds
for the same node: a node that grew is seen. Each run's load average is shown:
figures taken at another load are not comparable either.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

SLOWEST = 10


def slowest_nodes(out: Path, stage: str = "build", count: int = SLOWEST) -> list[list]:
    """The ``count`` slowest nodes of a bench stage's build, from the build's record
    kept beside the stage's log: [name, seconds], slowest first."""
    kept = out / "logs" / f"{stage}.build-state.json"
    if not kept.exists():
        return []
    nodes = json.loads(kept.read_text()).get("last_build", {}).get("nodes", {})
    ranked = sorted(((name, float(seconds)) for name, (_, seconds) in nodes.items()), key=_slow)
    return [[name, seconds] for name, seconds in ranked[:count]]


def _slow(node: tuple[str, float]) -> tuple[float, str]:
    return (-node[1], node[0])


def _node_seconds(out: Path, stage: str = "build") -> dict[str, float]:
    kept = out / "logs" / f"{stage}.build-state.json"
    if not kept.exists():
        return {}
    nodes = json.loads(kept.read_text()).get("last_build", {}).get("nodes", {})
    return {name: float(seconds) for name, (_, seconds) in nodes.items()}


def report(ours: Path, theirs: Path) -> str:
    """The table of both runs' stages and slowest nodes, as text."""
    mine = json.loads((ours / "results.json").read_text())
    other = json.loads((theirs / "results.json").read_text())
    lines = [
        f"this run ({ours}) beside {theirs}",
        f"load average at start/end: {_load(mine)} here, {_load(other)} there",
        "",
        f"{'stage':<24}{'s here':>9}{'s there':>9}{'ratio':>7}{'MB here':>9}{'MB there':>9}",
    ]
    there = {stage["name"]: stage for stage in other.get("stages", [])}
    for stage in mine.get("stages", []):
        match = there.get(stage["name"])
        if match is None:
            continue
        ratio = stage["seconds"] / match["seconds"] if match["seconds"] else float("nan")
        lines.append(
            f"{stage['name']:<24}{stage['seconds']:>9.2f}{match['seconds']:>9.2f}{ratio:>7.2f}"
            f"{stage['peak_tree_mb']:>9.0f}{match['peak_tree_mb']:>9.0f}"
        )
    ours_nodes, their_nodes = _node_seconds(ours), _node_seconds(theirs)
    if ours_nodes or their_nodes:
        lines += ["", f"the {SLOWEST} slowest nodes of each cold build (seconds)"]
        lines.append(f"{'node':<44}{'here':>8}{'there':>8}")
        shown = [name for name, _ in slowest_nodes(ours)]
        shown += [name for name, _ in slowest_nodes(theirs) if name not in shown]
        for name in shown:
            here, away = ours_nodes.get(name), their_nodes.get(name)
            lines.append(f"{name:<44}{_seconds(here):>8}{_seconds(away):>8}")
    return "\n".join(lines)


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _load(results: dict) -> str:
    load = results.get("load_average") or {}
    start, end = load.get("start"), load.get("end")
    if not start or not end:
        return "?"
    return f"{start[0]:.1f}/{end[0]:.1f}"


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: python bench/beside.py THIS_OUT OTHER_OUT (two bench --out folders)")
    print(report(Path(sys.argv[1]), Path(sys.argv[2])))
