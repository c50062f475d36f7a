"""`obs export tensorboard`: a run's reward metrics, read back with TensorBoard's own reader.

The warehouse is built with the real commands from a seeded run: rollout dumps
whose samples carry per-function `rewards` objects, and a JSON-lines metric log
(KL, policy entropy, advantages, eval accuracy) with gaps, so the marts hold
nulls. Every value read back is compared with the marts, queried here with
duckdb; tags are written out here rather than taken from obs.
"""

from __future__ import annotations

import json
import math
import random
import re
import sys
from pathlib import Path

import duckdb
import numpy as np
import pytest

from tests.conftest import run_cli

pytestmark = pytest.mark.integration

RUN = "grpo-tb"
ITERATIONS = 15
PROMPTS = 2
SAMPLES = 3  # per prompt: 6 samples an iteration
# "format" is a prefix of "format_strict" (and of "format_std"): the layout must tell them apart.
FUNCTIONS = ["correct", "format", "format_strict"]
ZERO_ITERATION = 7  # every reward 0: total 0, so contribution_pct is null
NO_KL = {3, 9}

STEP_TAGS = {
    "rewards/mean": "mean",
    "rewards/std": "std",
    "rewards/min": "min",
    "rewards/max": "max",
    "rewards/total": "total",
    "rewards/signal_to_noise": "signal_to_noise",
    "rewards/entropy": "entropy",
    "rewards/variance": "variance",
    "training/kl_divergence": "kl_divergence",
    "training/policy_entropy": "policy_entropy",
    "training/advantage_mean": "advantage_mean",
    "training/advantage_std": "advantage_std",
}
LAYOUT = {
    "Reward Signals": ["Total Rewards", "Per-Function Rewards", "Quality Metrics"],
    "Training Dynamics": ["Policy Metrics", "Advantages"],
    "Contributions": ["Reward Contributions (%)"],
}
LAYOUT_TAGS = {
    "Total Rewards": {"rewards/mean", "rewards/total", "rewards/max"},
    "Per-Function Rewards": {f"rewards/functions/{fn}" for fn in FUNCTIONS},
    "Quality Metrics": {"rewards/signal_to_noise", "rewards/entropy", "rewards/variance"},
    "Policy Metrics": {"training/kl_divergence", "training/policy_entropy"},
    "Advantages": {"training/advantage_mean", "training/advantage_std"},
    "Reward Contributions (%)": {f"contributions/{fn}" for fn in FUNCTIONS},
}


# --------------------------------------------------------------------------- the run


def write_run(folder: Path, seed: int = 7) -> tuple[Path, Path]:
    """Rollout dumps ``{iteration}.jsonl`` and a metric log; returns (dumps, log)."""
    rng = random.Random(seed)
    dumps = folder / "dumps"
    dumps.mkdir(parents=True)
    for it in range(ITERATIONS):
        with (dumps / f"{it}.jsonl").open("w") as out:
            for p in range(PROMPTS):
                for s in range(SAMPLES):
                    if it == ZERO_ITERATION:
                        rewards = dict.fromkeys(FUNCTIONS, 0.0)
                    else:
                        rewards = {
                            "correct": 1.0 if rng.random() < 0.3 + it * 0.03 else 0.0,
                            "format": round(rng.uniform(0.0, 0.5), 6),
                            "format_strict": round(0.2 + it * 0.02 + rng.gauss(0, 0.05), 6),
                        }
                    row = {
                        "input": f"prompt {p}",
                        "output": f"response {it}-{p}-{s}",
                        "score": sum(rewards.values()),
                        "rewards": rewards,
                    }
                    out.write(json.dumps(row) + "\n")
    log = folder / "metrics.jsonl"
    with log.open("w") as out:
        for step in range(ITERATIONS):
            row: dict[str, float | int] = {
                "step": step,
                "eval/accuracy": 0.5 + step * 0.01 + rng.gauss(0, 0.005),
            }
            if step not in NO_KL:
                row["kl"] = 0.002 * step + rng.uniform(0, 0.001)
            if step % 2 == 0:
                row["entropy"] = 1.2 - 0.03 * step
            if step >= 2:
                row["training/advantage_mean"] = rng.gauss(0, 0.01)
                row["training/advantage_std"] = 0.9 + rng.uniform(0, 0.1)
            out.write(json.dumps(row) + "\n")
    return dumps, log


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A lake and warehouse holding RUN, built with the real commands."""
    root = tmp_path_factory.mktemp("tb_export")
    dumps, log = write_run(root / "source")
    where = ["--lake", root / "lake", "--warehouse", root / "warehouse" / "obs.duckdb"]
    run_cli([*where, "ingest", "rollouts", dumps, "--run", RUN])
    run_cli([*where, "ingest", "metrics", log, "--run", RUN])
    run_cli([*where, "build"])
    return {"root": root, "lake": root / "lake", "warehouse": root / "warehouse" / "obs.duckdb"}


def obs(built: dict[str, Path], *args: object, exit_code: int = 0):
    return run_cli(
        ["--lake", built["lake"], "--warehouse", built["warehouse"], *args], exit_code=exit_code
    )


def export(built: dict[str, Path], logdir: Path, *args: object, exit_code: int = 0):
    return obs(built, "export", "tensorboard", RUN, "--logdir", logdir, *args, exit_code=exit_code)


def query(warehouse: Path, sql: str) -> list[dict]:
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        cursor = con.execute(sql, [RUN])
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
    finally:
        con.close()


def mart_points(warehouse: Path) -> dict[str, dict[int, float | None]]:
    """tag -> step -> the mart's value (None: null), for every tag the export writes."""
    points: dict[str, dict[int, float | None]] = {}
    for row in query(warehouse, "select * from fct_reward_steps where run_id = ? order by step"):
        for tag, column in STEP_TAGS.items():
            points.setdefault(tag, {})[row["step"]] = row[column]
    for row in query(
        warehouse,
        "select * from fct_reward_function_steps where run_id = ? order by step, reward_function",
    ):
        fn = row["reward_function"]
        for tag, column in (
            (f"rewards/functions/{fn}", "mean"),
            (f"rewards/functions/{fn}_std", "std"),
            (f"contributions/{fn}", "contribution_pct"),
        ):
            points.setdefault(tag, {})[row["step"]] = row[column]
    return points


def read_events(logdir: Path):
    from tensorboard.backend.event_processing import event_accumulator

    accumulator = event_accumulator.EventAccumulator(
        str(logdir),
        size_guidance={event_accumulator.SCALARS: 0, event_accumulator.TENSORS: 0},
    )
    accumulator.Reload()
    return accumulator


def read_layout(accumulator) -> object:
    from tensorboard.plugins.custom_scalar import layout_pb2

    events = accumulator.Tensors("custom_scalars__config__")
    assert len(events) == 1
    return layout_pb2.Layout.FromString(events[0].tensor_proto.string_val[0])


def f32(value: float) -> float:
    return float(np.float32(value))


@pytest.fixture(scope="module")
def exported(built: dict[str, Path]) -> dict:
    logdir = built["root"] / "tb" / RUN
    result = export(built, logdir)
    match = re.search(r"(\d+) scalars", result.stderr)
    assert match, result.stderr
    return {
        "logdir": logdir,
        "file": Path(result.stdout.strip()),
        "scalars": int(match.group(1)),
        "stderr": result.stderr,
    }


# --------------------------------------------------------------------------- tests


def test_every_tag_holds_the_marts_values_at_their_steps(
    built: dict[str, Path], exported: dict
) -> None:
    expected = mart_points(built["warehouse"])
    accumulator = read_events(exported["logdir"])
    tags = set(accumulator.Tags()["scalars"])

    wanted = set(STEP_TAGS) | {
        tag
        for fn in FUNCTIONS
        for tag in (f"rewards/functions/{fn}", f"rewards/functions/{fn}_std", f"contributions/{fn}")
    }
    assert tags == wanted
    assert set(expected) == wanted

    written = 0
    for tag in sorted(wanted):
        events = accumulator.Scalars(tag)
        present = {step: value for step, value in expected[tag].items() if value is not None}
        assert [e.step for e in events] == sorted(present), tag  # steps equal, nulls absent
        assert [e.value for e in events] == [f32(present[e.step]) for e in events], tag
        written += len(events)
    assert written == exported["scalars"]
    assert exported["file"].parent == exported["logdir"]
    assert exported["file"].is_file()
    assert f"{exported['scalars']} scalars" in exported["stderr"]
    assert str(exported["logdir"]) in exported["stderr"]

    # The run really has the nulls the export must leave out.
    kl = expected["training/kl_divergence"]
    assert {s for s, v in kl.items() if v is None} == NO_KL
    assert len(accumulator.Scalars("training/kl_divergence")) == ITERATIONS - len(NO_KL)
    assert expected["contributions/format"][ZERO_ITERATION] is None
    assert ZERO_ITERATION not in {e.step for e in accumulator.Scalars("contributions/format")}
    entropy_steps = [e.step for e in accumulator.Scalars("training/policy_entropy")]
    assert entropy_steps == list(range(0, ITERATIONS, 2))
    assert [e.step for e in accumulator.Scalars("training/advantage_std")] == list(
        range(2, ITERATIONS)
    )


def test_custom_scalars_layout_is_the_reward_monitors(exported: dict) -> None:
    accumulator = read_events(exported["logdir"])
    layout = read_layout(accumulator)
    assert [c.title for c in layout.category] == list(LAYOUT)
    for category in layout.category:
        assert [chart.title for chart in category.chart] == LAYOUT[category.title]
        for chart in category.chart:
            assert chart.WhichOneof("content") == "multiline"
    charts = {chart.title: chart for c in layout.category for chart in c.chart}
    assert list(charts["Total Rewards"].multiline.tag) == [
        "rewards/mean",
        "rewards/total",
        "rewards/max",
    ]
    assert list(charts["Quality Metrics"].multiline.tag) == [
        "rewards/signal_to_noise",
        "rewards/entropy",
        "rewards/variance",
    ]
    assert list(charts["Policy Metrics"].multiline.tag) == [
        "training/kl_divergence",
        "training/policy_entropy",
    ]
    assert list(charts["Advantages"].multiline.tag) == [
        "training/advantage_mean",
        "training/advantage_std",
    ]
    # TensorBoard draws a tag in a chart when one of its entries re.match-es it:
    # each chart must draw exactly its own tags out of all the logdir holds.
    tags = set(accumulator.Tags()["scalars"])
    for title, chart in charts.items():
        drawn = {t for t in tags if any(re.match(entry, t) for entry in chart.multiline.tag)}
        assert drawn == LAYOUT_TAGS[title], title
    assert len(charts["Per-Function Rewards"].multiline.tag) == len(FUNCTIONS)
    assert len(charts["Reward Contributions (%)"].multiline.tag) == len(FUNCTIONS)


def test_exported_logdir_ingests_back_as_the_same_points(
    built: dict[str, Path], exported: dict
) -> None:
    result = obs(built, "ingest", "metrics", exported["logdir"], "--run", "R2", "--json")
    report = json.loads(result.stdout)
    assert report["run_ids"] == ["R2"]
    assert report["rows_landed"] == exported["scalars"]

    con = duckdb.connect()
    try:
        pattern = str(built["lake"] / "metrics" / "**" / "*.parquet")
        landed = con.execute(
            f"select key, step, value from read_parquet('{pattern}', hive_partitioning = true, "
            "hive_types_autocast = false) where run_id = 'R2'"
        ).fetchall()
    finally:
        con.close()
    assert len(landed) == exported["scalars"]
    expected = mart_points(built["warehouse"])
    for key, step, value in landed:
        assert expected[key][step] is not None
        assert math.isclose(value, expected[key][step], rel_tol=1e-6, abs_tol=1e-7), (key, step)


def test_logdir_with_an_export_needs_force(built: dict[str, Path]) -> None:
    logdir = built["root"] / "tb-again"
    first = Path(export(built, logdir).stdout.strip())
    refused = export(built, logdir, exit_code=1)
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1
    assert str(first) in lines[0] and "--force" in lines[0]
    assert [p.name for p in logdir.iterdir()] == [first.name]

    forced = export(built, logdir, "--force")
    second = Path(forced.stdout.strip())
    assert "replacing 1 earlier file" in forced.stderr
    assert [p.name for p in logdir.iterdir()] == [second.name]
    accumulator = read_events(logdir)
    assert len(accumulator.Scalars("rewards/mean")) == ITERATIONS  # one point per step


def test_logdir_with_other_event_files_is_refused_even_with_force(
    built: dict[str, Path],
) -> None:
    from tensorboardX import SummaryWriter

    logdir = built["root"] / "trainer-logs"
    with SummaryWriter(logdir=str(logdir)) as writer:
        writer.add_scalar("train/loss", 0.5, global_step=1)
    before = sorted(p.name for p in logdir.iterdir())
    for extra in ([], ["--force"]):
        result = export(built, logdir, *extra, exit_code=1)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1
        assert "obs did not write" in lines[0] and "Traceback" not in result.output
    assert sorted(p.name for p in logdir.iterdir()) == before


def test_unknown_run_is_one_line(built: dict[str, Path], tmp_path: Path) -> None:
    logdir = tmp_path / "tb"
    result = obs(built, "export", "tensorboard", "no-such-run", "--logdir", logdir, exit_code=1)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "no run 'no-such-run'" in lines[0] and RUN in lines[0]
    assert "Traceback" not in result.output
    assert result.stdout == ""
    assert not logdir.exists()


def test_without_tensorboardx_one_line_names_the_fix(
    built: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "tensorboardX", None)  # import raises ImportError
    logdir = tmp_path / "tb"
    result = obs(built, "export", "tensorboard", RUN, "--logdir", logdir, exit_code=1)
    assert result.stderr.strip().splitlines() == [
        "Error: obs export tensorboard needs tensorboardX: pip install tensorboardX"
    ]
    assert not logdir.exists()
