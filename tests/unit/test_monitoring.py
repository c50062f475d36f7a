"""The GRPO reward monitor: RewardTracker's files, and `obs ingest monitoring` landing them.

Folders are written by the real writer (obs.monitor.RewardTracker) or by hand
where a test needs a shape the writer never makes (the dataclass vocabulary,
a prefix, damaged files). The lake is read back with DuckDB and compared with
what was written; the expected statistics are computed by hand.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from obs.ingest import keyed as histories
from obs.ingest.trackers import reward_monitor
from obs.monitor import RewardTracker
from obs.monitor import format as monitoring_format

from tests.conftest import Invoke, lake_query

FUNCTIONS = ["format_exact", "answer_match", "length_ok"]
OBS = str(Path(sys.executable).parent / "obs")


# --------------------------------------------------------------------------- helpers


def _write_run(
    folder: Path,
    steps: int = 30,
    samples: int = 8,
    *,
    first: int = 0,
    window: int = 100,
    distributions: bool = True,
    close: bool = True,
    seed: int = 0,
) -> dict[int, tuple[dict[str, float], dict[str, list[float]]]]:
    """A run written by RewardTracker: per step, the metrics returned and the rewards given."""
    rng = np.random.default_rng(seed)
    written = {}
    tracker = RewardTracker(
        FUNCTIONS, folder, window_size=window, track_distributions=distributions
    )
    for step in range(first, first + steps):
        rewards = {
            "format_exact": (rng.integers(0, 2, samples) * 3.0).tolist(),
            "answer_match": rng.random(samples).round(3).tolist(),
            "length_ok": (-rng.random(samples) * 0.5).tolist(),
        }
        metrics = tracker.track_step(
            step,
            rewards,
            kl_divergence=0.01 * step,
            policy_entropy=2.0,
            advantages=rng.normal(size=samples),
            batch_size=samples,
            num_generations=4,
        )
        written[step] = (metrics, rewards)
    if close:
        tracker.close()
    return written


def _file_points(folder: Path) -> dict[tuple[int, str], float]:
    """Every (step, key) -> value the step files hold, read with plain json."""
    points = {}
    for path in folder.glob("step_*.json"):
        data = json.loads(path.read_text())
        points[(data["step"], "timestamp")] = data["timestamp"]
        for key, value in data["metrics"].items():
            points[(data["step"], key)] = value
    return points


def _landed_points(lake: Path, run: str) -> dict[tuple[int, str], float]:
    rows = lake_query(lake, "metrics", f"select step, key, value from t where run_id = '{run}'")
    points = {(step, key): value for step, key, value in rows}
    assert len(points) == len(rows), "a (step, key) landed twice"
    return points


def _landed_samples(lake: Path, run: str) -> dict[tuple[int, str, int], float]:
    rows = lake_query(
        lake,
        "reward_samples",
        f"select step, reward_function, sample_idx, reward from t where run_id = '{run}'",
    )
    samples = {(step, fn, idx): reward for step, fn, idx, reward in rows}
    assert len(samples) == len(rows), "a sample landed twice"
    return samples


def _rejects(lake: Path) -> list[tuple[str, str, int, str]]:
    rows = lake_query(
        lake, "_rejects", "select table_name, source_file, source_line, reason from t"
    )
    return sorted((table, Path(file).name, line, reason) for table, file, line, reason in rows)


def _ingest(invoke: Invoke, folder: Path, *args: object) -> dict[str, Any]:
    result = invoke(["ingest", "monitoring", folder, *args, "--json"])
    return json.loads(result.stdout)


def _write(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return path


# --------------------------------------------------------------------------- the writer


def test_worked_example(tmp_path: Path) -> None:
    tracker = RewardTracker(["func1", "func2"], tmp_path / "m")
    got = tracker.track_step(
        42,
        {"func1": [1.0, 2.0, 1.5], "func2": [0.5, 0.7, 0.6]},
        kl_divergence=0.05,
        policy_entropy=2.3,
    )
    path = tmp_path / "m" / "step_000042.json"
    data = json.loads(path.read_text())
    # R = [1.5, 2.7, 2.1]; R - min = [0, 1.2, 0.6] -> p = [0, 2/3, 1/3]
    expected = {
        "rewards/mean": 2.1,
        "rewards/std": math.sqrt(0.24),
        "rewards/variance": 0.24,
        "rewards/min": 1.5,
        "rewards/max": 2.7,
        "rewards/total": 6.3,
        "rewards/signal_to_noise": 2.1 / math.sqrt(0.24),
        "rewards/entropy": -(2 / 3 * math.log(2 / 3) + 1 / 3 * math.log(1 / 3)),
        "rewards/functions/func1": 1.5,
        "rewards/functions/func1_std": math.sqrt(1 / 6),
        "rewards/functions/func2": 0.6,
        "rewards/functions/func2_std": math.sqrt(0.02 / 3),
        "contributions/func1": 100 * 4.5 / 6.3,
        "contributions/func2": 100 * 1.8 / 6.3,
        "training/kl_divergence": 0.05,
        "training/policy_entropy": 2.3,
    }
    for metrics in (got, data["metrics"]):
        assert set(metrics) == set(expected)
        for key, value in expected.items():
            assert metrics[key] == pytest.approx(value, rel=1e-8), key
        # the figures as rounded by hand
        assert metrics["rewards/std"] == pytest.approx(0.489898, abs=1e-6)
        assert metrics["rewards/signal_to_noise"] == pytest.approx(4.28660, abs=1e-5)
        assert metrics["contributions/func1"] == pytest.approx(71.4286, abs=1e-4)
        assert metrics["contributions/func2"] == pytest.approx(28.5714, abs=1e-4)
        assert metrics["rewards/entropy"] == pytest.approx(0.636514, abs=1e-6)
    assert data["step"] == 42
    assert data["reward_scores"] == {}
    assert 0 <= data["timestamp"] < 60  # seconds since the tracker started, not epoch
    assert sorted(p.name for p in (tmp_path / "m").iterdir()) == ["step_000042.json"]


def test_edge_cases_of_the_formulas(tmp_path: Path) -> None:
    tracker = RewardTracker(["a", "b"], tmp_path / "m", track_distributions=True)
    one = tracker.track_step(0, {"a": [2.0], "b": [1.0]})
    assert (one["rewards/std"], one["rewards/entropy"], one["rewards/signal_to_noise"]) == (
        0.0,
        0.0,
        0.0,
    )
    equal = tracker.track_step(1, {"a": [1.0, 1.0], "b": [0.0, 0.0]})
    assert (equal["rewards/entropy"], equal["rewards/signal_to_noise"]) == (0.0, 0.0)
    # total reward <= 0: no contributions
    negative = tracker.track_step(2, {"a": [-1.0, -2.0], "b": [0.5, 0.5]})
    assert negative["rewards/total"] == pytest.approx(-2.0)
    assert not [k for k in negative if k.startswith("contributions/")]
    zero = tracker.track_step(3, {"a": [1.0, -1.0], "b": [0.0, 0.0]})
    assert not [k for k in zero if k.startswith("contributions/")]
    # advantages: population mean and std; batch sizes as given; nothing else of training
    full = tracker.track_step(
        4,
        {"a": [1.0, 2.0, 3.0, 4.0], "b": [0.0, 0.0, 0.0, 1.0]},
        advantages=[1.0, 2.0, 3.0, 4.0],
        value_estimate=0.7,
        batch_size=4,
        num_generations=2,
    )
    assert full["training/advantage_mean"] == 2.5
    assert full["training/advantage_std"] == pytest.approx(math.sqrt(1.25))
    assert full["training/value_estimate"] == 0.7
    assert (full["batch/size"], full["batch/num_generations"]) == (4, 2)
    assert "training/kl_divergence" not in full and "training/policy_entropy" not in full
    assert full["contributions/a"] == pytest.approx(100 * 10 / 11)
    # distributions: every sample as given
    scores = json.loads((tmp_path / "m" / "step_000004.json").read_text())["reward_scores"]
    assert scores == {"a": [1.0, 2.0, 3.0, 4.0], "b": [0.0, 0.0, 0.0, 1.0]}


def test_bad_calls_raise(tmp_path: Path) -> None:
    tracker = RewardTracker(["a", "b"], tmp_path / "m")
    with pytest.raises(ValueError, match="lengths differ"):
        tracker.track_step(0, {"a": [1.0, 2.0], "b": [1.0]})
    with pytest.raises(ValueError, match="'c' is not one of"):
        tracker.track_step(0, {"a": [1.0], "c": [1.0]})
    with pytest.raises(ValueError, match="non-negative integer"):
        tracker.track_step(-1, {"a": [1.0]})
    with pytest.raises(ValueError, match="no samples"):
        tracker.track_step(0, {"a": [], "b": []})
    assert list((tmp_path / "m").iterdir()) == []  # nothing written for a refused step
    tracker.close()
    with pytest.raises(RuntimeError, match="closed"):
        tracker.track_step(1, {"a": [1.0]})


def test_non_finite_values_are_written_as_null(tmp_path: Path) -> None:
    tracker = RewardTracker(["a"], tmp_path / "m", track_distributions=True)
    got = tracker.track_step(0, {"a": [1.0, math.nan]})
    assert math.isnan(got["rewards/mean"])
    text = (tmp_path / "m" / "step_000000.json").read_text()

    def refuse(constant: str) -> None:
        raise AssertionError(f"{constant} in the file")

    data = json.loads(text, parse_constant=refuse)  # valid JSON: no NaN literal
    assert data["metrics"]["rewards/mean"] is None
    assert data["reward_scores"] == {"a": [1.0, None]}


def test_close_writes_final_files_and_no_temporary_file(tmp_path: Path) -> None:
    folder = tmp_path / "m"
    with RewardTracker(["a", "b"], folder, window_size=3) as tracker:
        for step in range(5):
            tracker.track_step(step, {"a": [1.0, float(step)], "b": [0.5, 0.5]}, kl_divergence=0.1)
    assert sorted(p.name for p in folder.iterdir()) == [
        "final_metrics.json",
        *(f"step_{n:06d}.json" for n in range(5)),
        "summary.json",
    ]
    final = json.loads((folder / "final_metrics.json").read_text())
    assert final["config"] == {
        "reward_function_names": ["a", "b"],
        "window_size": 3,
        "track_distributions": False,
    }
    history = final["metrics_history"]
    assert [e["step"] for e in history] == [2, 3, 4]  # the last window_size steps
    assert history[-1]["mean_reward"] == pytest.approx((1.5 + 4.5) / 2)
    assert history[-1]["function_means"] == {"a": 2.5, "b": 0.5}
    assert history[-1]["kl_divergence"] == 0.1
    summary = json.loads((folder / "summary.json").read_text())
    assert summary == final["summary"]
    assert (summary["latest_step"], summary["total_steps_tracked"]) == (4, 5)
    assert summary["function_statistics"]["a"]["mean"] == pytest.approx((1.5 + 2.0 + 2.5) / 3)
    tracker.close()  # a second close writes nothing new and does not fail


def test_a_failed_write_leaves_no_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tracker = RewardTracker(["a"], tmp_path / "m")
    tracker.track_step(0, {"a": [1.0]})

    def fail(source: str, target: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(monitoring_format.os, "replace", fail)
    with pytest.raises(OSError, match="No space"):
        tracker.track_step(1, {"a": [2.0]})
    assert [p.name for p in (tmp_path / "m").iterdir()] == ["step_000000.json"]


def test_import_loads_no_arrow_duckdb_or_pandas() -> None:
    code = (
        "import sys, obs.monitor; "
        "assert obs.monitor.RewardTracker.__module__ == 'obs.monitor.format'; "
        "print(sorted(m for m in ('pyarrow', 'duckdb', 'pandas') if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd="/", check=True
    )
    assert done.stdout.strip() == "[]"


# --------------------------------------------------------------------------- finding


def test_found_on_its_own_and_by_no_other_reader(tmp_path: Path) -> None:
    folder = tmp_path / "exp" / "monitoring_data"
    _write_run(folder, steps=3)
    sources = histories.plan(tmp_path)
    assert [(s.format, s.origin) for s in sources] == [("reward-monitor", folder)]
    assert reward_monitor.find(folder / "step_000001.json") == [("reward-monitor", folder)]
    # files that only share the names are not a monitor's
    other = tmp_path / "other"
    _write(other / "summary.json", {"rows": 3, "runs": ["a"]})
    _write(other / "step_1.json", {"foo": 1})
    assert reward_monitor.find(other) == []


# --------------------------------------------------------------------------- landing


def test_written_run_lands_every_value_once(tmp_path: Path, invoke: Invoke, lake: Path) -> None:
    folder = tmp_path / "monitoring_data"
    written = _write_run(folder, steps=30, samples=8)
    expected = _file_points(folder)
    # the file holds what track_step returned, plus the timestamp
    assert {(s, k): v for (s, k), v in expected.items() if k != "timestamp"} == {
        (step, key): value
        for step, (metrics, _) in written.items()
        for key, value in metrics.items()
    }
    first = _ingest(invoke, folder, "--run", "grpo-1")
    assert first["run_ids"] == ["grpo-1"]
    assert (first["points_landed"], first["samples_landed"]) == (len(expected), 30 * 3 * 8)
    assert first["rows_landed"] == len(expected) + 30 * 3 * 8
    assert first["rows_rejected"] == 0
    assert _landed_points(lake, "grpo-1") == expected
    samples = _landed_samples(lake, "grpo-1")
    assert samples == {
        (step, fn, idx): value
        for step, (_, rewards) in written.items()
        for fn, values in rewards.items()
        for idx, value in enumerate(values)
    }
    [(source,)] = lake_query(lake, "reward_samples", "select distinct source from t")
    assert source == "reward-monitor"
    files = lake_query(lake, "reward_samples", "select distinct source_file from t where step = 7")
    assert files == [(str((folder / "step_000007.json").resolve()),)]

    again = _ingest(invoke, folder, "--run", "grpo-1")
    assert again["rows_landed"] == 0

    # a step added later lands only its rows
    later = _write_run(folder, steps=1, first=30, close=False, seed=1)
    third = _ingest(invoke, folder, "--run", "grpo-1")
    new_keys = len(later[30][0]) + 1  # and its timestamp
    assert (third["points_landed"], third["samples_landed"]) == (new_keys, 3 * 8)
    assert len(_landed_points(lake, "grpo-1")) == len(expected) + new_keys
    assert len(_landed_samples(lake, "grpo-1")) == 31 * 3 * 8


def test_metrics_command_finds_the_folder_and_names_the_run_after_it(
    tmp_path: Path, invoke: Invoke, lake: Path
) -> None:
    folder = tmp_path / "monitoring_data"
    _write_run(folder, steps=4, samples=2)
    result = invoke(["ingest", "metrics", folder])
    assert result.stdout.startswith("run monitoring_data: ")
    assert " points and 24 reward samples landed, 0 rejected, from 1 source" in result.stdout
    [(runs,)] = lake_query(lake, "reward_samples", "select count(distinct run_id) from t")
    assert runs == 1
    line = invoke(["ingest", "monitoring", folder]).stdout
    assert line.startswith("run monitoring_data: 0 points and 0 reward samples landed")


def test_prefix_and_dataclass_vocabulary_land_as_the_same_keys(tmp_path: Path) -> None:
    wandb_style = {
        "rewards/mean": 1.0,
        "rewards/std": 0.5,
        "rewards/min": 0.0,
        "rewards/max": 2.0,
        "rewards/total": 8.0,
        "rewards/signal_to_noise": 2.0,
        "rewards/entropy": 1.2,
        "rewards/variance": 0.25,
        "rewards/functions/fmt": 0.75,
        "rewards/functions/fmt_std": 0.1,
        "contributions/fmt": 60.0,
        "training/kl_divergence": 0.01,
        "training/policy_entropy": 2.5,
        "training/advantage_mean": 0.0,
        "training/advantage_std": 1.0,
        "training/value_estimate": 0.3,
        "batch/size": 8,
        "batch/num_generations": 4,
    }
    dataclass_style = {
        "mean_reward": 1.0,
        "std_reward": 0.5,
        "min_reward": 0.0,
        "max_reward": 2.0,
        "total_reward": 8.0,
        "signal_to_noise": 2.0,
        "reward_entropy": 1.2,
        "reward_variance": 0.25,
        "function_means": {"fmt": 0.75},
        "function_stds": {"fmt": 0.1},
        "function_contributions": {"fmt": 60.0},
        "kl_divergence": 0.01,
        "policy_entropy": 2.5,
        "advantage_mean": 0.0,
        "advantage_std": 1.0,
        "value_estimate": 0.3,
        "batch_size": 8,
        "num_generations": 4,
    }
    shapes = {
        "wandb": {"step": 7, "timestamp": 3.5, "metrics": wandb_style},
        "prefixed": {
            "step": 7,
            "timestamp": 3.5,
            "metrics": {f"train/{k}": v for k, v in wandb_style.items()},
        },
        "dataclass": {"step": 7, "timestamp": 3.5, "metrics": dataclass_style},
        "top-level": {"step": 7, "timestamp": 3.5, **dataclass_style},
    }
    read = {}
    for name, content in shapes.items():
        folder = _write(tmp_path / name / "step_000007.json", content).parent
        [history] = reward_monitor.read("reward-monitor", folder, folder)
        assert history.rejects == []
        read[name] = (
            dict(zip(zip(history.steps, history.keys, strict=True), history.values, strict=True)),
            history.config,
        )
    expected = {(7, key): float(value) for key, value in wandb_style.items()} | {
        (7, "timestamp"): 3.5
    }
    for name, (points, config) in read.items():
        assert points == expected, name
        assert config == ({"monitor_prefix": "train"} if name == "prefixed" else {}), name


def test_final_metrics_fill_the_steps_without_a_file(
    tmp_path: Path, invoke: Invoke, lake: Path
) -> None:
    folder = tmp_path / "monitoring_data"
    written = _write_run(folder, steps=20, window=10, distributions=False)
    for step in (3, 12, 15):
        (folder / f"step_{step:06d}.json").unlink()
    summary = json.loads((folder / "summary.json").read_text())
    summary["latest_step"] = 99  # summary.json wins over final_metrics' summary
    (folder / "summary.json").write_text(json.dumps({"summary": summary}))
    _ingest(invoke, folder, "--run", "r")
    points = _landed_points(lake, "r")
    steps = {step for step, _ in points}
    assert steps == set(range(20)) - {3}  # step 3 left the window before the end
    history_keys = {
        "timestamp",
        "rewards/mean",
        "rewards/std",
        "rewards/signal_to_noise",
        "training/kl_divergence",
        *(f"rewards/functions/{fn}" for fn in FUNCTIONS),
    }
    for step in (12, 15):
        metrics = written[step][0]
        held = {key: value for (s, key), value in points.items() if s == step}
        contributions = {k for k in metrics if k.startswith("contributions/")}
        assert set(held) == history_keys | contributions
        for key in history_keys - {"timestamp"} | contributions:
            assert held[key] == pytest.approx(metrics[key], rel=1e-12), (step, key)
    # a step with its file keeps the file's values, every key of them
    assert {k for (s, k) in points if s == 14} == set(written[14][0]) | {"timestamp"}
    [(state, config, landed_summary)] = lake_query(
        lake, "runs", "select state, config, summary from t"
    )
    assert state == "finished"
    assert json.loads(config) == {
        "reward_function_names": FUNCTIONS,
        "window_size": 10,
        "track_distributions": False,
    }
    landed_summary = json.loads(landed_summary)
    assert (landed_summary["latest_step"], landed_summary["total_steps_tracked"]) == (99, 20)


# --------------------------------------------------------------------------- hostile input


def test_bom_and_damaged_step_files(tmp_path: Path, invoke: Invoke, lake: Path) -> None:
    folder = tmp_path / "monitoring_data"
    _write_run(folder, steps=4, samples=2, close=False)
    expected = _file_points(folder)
    bom = folder / "step_000001.json"
    bom.write_bytes(b"\xef\xbb\xbf" + bom.read_bytes())
    (folder / "step_000005.json").write_text('{"step": 5, "metrics": {"rewards/mean": }}')
    (folder / "step_000006.json").write_text("[1, 2]")
    (folder / "step_000007.json").write_text('{"metrics": {"rewards/mean": 1.0}}')
    (folder / "step_000008.json").write_text('{"step": "eight", "metrics": {}}')
    (folder / "step_000009.json").write_text('{"step": 9, "metrics": [1.0]}')
    (folder / "step_000010.json").write_text("not json at all")
    # the newest file, whole and good: the damaged ones are not "being written"
    _write(folder / "step_000011.json", {"step": 11, "metrics": {"rewards/mean": 0.5}})
    payload = _ingest(invoke, folder, "--run", "r")
    assert payload["rows_rejected"] == 6
    assert _landed_points(lake, "r") == expected | {(11, "rewards/mean"): 0.5}
    rejects = _rejects(lake)
    assert [(t, f, line) for t, f, line, _ in rejects] == [
        ("metrics", f"step_{n:06d}.json", 1) for n in range(5, 11)
    ]
    reasons = [reason for *_, reason in rejects]
    assert reasons[0].startswith("malformed JSON: ")
    assert reasons[1:5] == [
        "not a JSON object: a list",
        "no step field",
        'step is not a non-negative integer: "eight"',
        "metrics is not an object: a list",
    ]
    assert reasons[5].startswith("malformed JSON: ")
    # read again (a new step makes the folder change): the rejects are not recorded twice
    _write(folder / "step_000012.json", {"step": 12, "metrics": {"rewards/mean": 0.25}})
    assert _ingest(invoke, folder, "--run", "r")["rows_rejected"] == 0
    assert len(_rejects(lake)) == 6


def test_strict_lands_nothing_when_a_file_is_damaged(
    tmp_path: Path, invoke: Invoke, lake: Path
) -> None:
    folder = tmp_path / "monitoring_data"
    _write_run(folder, steps=3, samples=2)
    (folder / "step_000001.json").write_text("garbage")
    result = invoke(["ingest", "monitoring", folder, "--strict", "-q"], exit_code=1)
    assert "(--strict): nothing landed" in result.stderr
    assert not (lake / "metrics").exists() and not (lake / "reward_samples").exists()


def test_a_file_still_being_written_lands_once_complete(
    tmp_path: Path, invoke: Invoke, lake: Path
) -> None:
    folder = tmp_path / "monitoring_data"
    _write_run(folder, steps=5, samples=2, close=False)
    landed_before = _file_points(folder)
    content = {
        "step": 5,
        "timestamp": 9.0,
        "metrics": {"rewards/mean": 1.5, "rewards/std": 0.5},
        "reward_scores": {fn: [1.0, 2.0] for fn in FUNCTIONS},
    }
    text = json.dumps(content)
    newest = folder / "step_000005.json"
    newest.write_text(text[: len(text) // 2])
    first = _ingest(invoke, folder, "--run", "r")
    assert first["rows_rejected"] == 0
    assert "step_000005.json is not complete JSON yet" in first["file_results"][0]["note"]
    assert _landed_points(lake, "r") == landed_before
    newest.write_text(text)
    second = _ingest(invoke, folder, "--run", "r")
    assert (second["points_landed"], second["samples_landed"]) == (3, 3 * 2)
    assert _landed_points(lake, "r") == landed_before | {
        (5, "timestamp"): 9.0,
        (5, "rewards/mean"): 1.5,
        (5, "rewards/std"): 0.5,
    }
    assert not (lake / "_rejects").exists()


def test_bad_reward_scores_reject_the_samples_and_keep_the_metrics(
    tmp_path: Path, invoke: Invoke, lake: Path
) -> None:
    folder = tmp_path / "monitoring_data"
    steps = {
        1: '{"step": 1, "metrics": {"rewards/mean": NaN, "rewards/std": Infinity}, '
        '"reward_scores": {"a": [1.0, NaN], "b": [0.0, 1.0]}}',
        2: '{"step": 2, "metrics": {"rewards/mean": 2.0}, '
        '"reward_scores": {"a": [1.0, 2.0, 3.0], "b": [0.0, 1.0]}}',
        3: '{"step": 3, "metrics": {"rewards/mean": 3.0}, '
        '"reward_scores": {"a": [1.0, "2.0"], "b": [0.0, 1.0]}}',
        4: '{"step": 4, "metrics": {"rewards/mean": 4.0}, '
        '"reward_scores": {"a": [1, 2.5], "b": [0.0, -1.0]}}',
    }
    for step, text in steps.items():
        (folder / f"step_{step:06d}.json").parent.mkdir(exist_ok=True)
        (folder / f"step_{step:06d}.json").write_text(text)
    payload = _ingest(invoke, folder, "--run", "r")
    assert payload["rows_rejected"] == 3
    points = _landed_points(lake, "r")
    assert math.isnan(points[(1, "rewards/mean")]) and points[(1, "rewards/std")] == math.inf
    assert [points[(s, "rewards/mean")] for s in (2, 3, 4)] == [2.0, 3.0, 4.0]
    assert _landed_samples(lake, "r") == {
        (4, "a", 0): 1.0,
        (4, "a", 1): 2.5,
        (4, "b", 0): 0.0,
        (4, "b", 1): -1.0,
    }
    assert _rejects(lake) == [
        (
            "reward_samples",
            "step_000001.json",
            1,
            "reward_scores of a hold a non-finite value: sample 1 is NaN",
        ),
        ("reward_samples", "step_000002.json", 1, "reward_scores of unequal lengths: a=3, b=2"),
        (
            "reward_samples",
            "step_000003.json",
            1,
            'reward_scores of a hold a non-number: sample 1 is "2.0"',
        ),
    ]


def test_step_inside_the_file_wins_and_the_last_file_of_a_step(
    tmp_path: Path, invoke: Invoke, lake: Path
) -> None:
    folder = tmp_path / "monitoring_data"
    _write(folder / "step_000004.json", {"step": 4, "metrics": {"rewards/mean": 4.0}})
    _write(folder / "step_000005.json", {"step": 6, "metrics": {"rewards/mean": 5.0, "x": 1}})
    _write(folder / "step_000006.json", {"step": 6, "metrics": {"rewards/mean": 6.0}})
    payload = _ingest(invoke, folder, "--run", "r")
    note = payload["file_results"][0]["note"]
    assert "step_000005.json holds step 6: the step inside a file is kept" in note
    assert "the last by file name is kept (step_000006.json over step_000005.json)" in note
    assert _landed_points(lake, "r") == {(4, "rewards/mean"): 4.0, (6, "rewards/mean"): 6.0}


def test_a_step_file_written_again_lands_its_new_samples(
    tmp_path: Path, invoke: Invoke, lake: Path
) -> None:
    folder = tmp_path / "monitoring_data"
    _write_run(folder, steps=3, samples=4, close=False)
    _ingest(invoke, folder, "--run", "r")
    path = folder / "step_000001.json"
    data = json.loads(path.read_text())
    data["reward_scores"]["answer_match"] = [9.0, 8.0, 7.0, 6.0]  # one function, other values
    path.write_text(json.dumps(data))
    payload = _ingest(invoke, folder, "--run", "r")
    assert (payload["points_landed"], payload["samples_landed"]) == (0, 4)
    assert payload["rows_rejected"] == 0
    assert "1 reward-sample blocks (step, function) differ" in payload["file_results"][0]["note"]
    # the newest part of each (step, function) is the value (as stg_reward_samples reads it)
    newest = lake_query(
        lake,
        "reward_samples",
        "select sample_idx, reward from t where step = 1 and reward_function = 'answer_match' "
        "qualify dense_rank() over (partition by step, reward_function "
        "order by ingested_at desc) = 1 order by sample_idx",
    )
    assert newest == [(0, 9.0), (1, 8.0), (2, 7.0), (3, 6.0)]
    [(rows,)] = lake_query(lake, "reward_samples", "select count(*) from t")
    assert rows == 3 * 3 * 4 + 4


def test_an_odd_run_name_is_refused_in_one_line(tmp_path: Path, invoke: Invoke, lake: Path) -> None:
    """Every ingest command checks --run the one way: a usage error (exit 2) whose one
    error line says the rule."""
    folder = tmp_path / "monitoring_data"
    _write_run(folder, steps=2, samples=2)
    result = invoke(["ingest", "monitoring", folder, "--run", "my run/1"], exit_code=2)
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error")]
    assert len(errors) == 1
    assert errors[0].startswith(
        "Error: Invalid value for '--run': 'my run/1' is not a valid run id: use 1 to 128"
    )
    assert "Traceback" not in result.output
    assert not lake.exists()
    empty = invoke(["ingest", "monitoring", tmp_path / "nothing-here"], exit_code=1)
    assert empty.stderr.count("\n") == 1 and "no such file or folder" in empty.stderr
    (tmp_path / "plain").mkdir()
    plain = invoke(["ingest", "monitoring", tmp_path / "plain"], exit_code=1)
    assert plain.stderr.count("\n") == 1 and "holds no reward monitor files" in plain.stderr


def test_debris_of_a_killed_ingest_is_removed(tmp_path: Path, invoke: Invoke, lake: Path) -> None:
    folder = tmp_path / "monitoring_data"
    _write_run(folder, steps=3, samples=4, close=False)
    _ingest(invoke, folder, "--run", "r")
    # what a kill between staging and the manifest leaves: a part no manifest lists
    [part] = (lake / "reward_samples" / "run_id=r").glob("*/part.parquet")
    orphan = lake / "reward_samples" / "run_id=r" / "ingested_at=20990101T000000000000Z"
    orphan.mkdir()
    (orphan / "part.parquet").write_bytes(part.read_bytes())
    staged = lake / "_staging" / "r.12345.deadbeef" / "reward_samples.x"
    staged.mkdir(parents=True)
    (staged / "part.parquet").write_bytes(part.read_bytes())
    _write_run(folder, steps=1, samples=4, first=3, close=False)
    payload = _ingest(invoke, folder, "--run", "r")
    assert payload["samples_landed"] == 3 * 4
    assert not orphan.exists() and not staged.parent.exists()
    assert len(_landed_samples(lake, "r")) == 4 * 3 * 4


def test_two_sources_of_one_run_do_not_land_their_attributes_again(
    tmp_path: Path, invoke: Invoke, lake: Path
) -> None:
    """A trainer's metric log and its monitor under one --run, each ingested again after
    the other: each source's unchanged attributes land once (the runs key holds)."""
    folder = tmp_path / "monitoring_data"
    tracker = RewardTracker(["f"], folder)
    tracker.track_step(0, {"f": [1.0, 2.0]})
    log = tmp_path / "metrics.jsonl"
    log.write_text('{"step": 0, "loss": 0.5}\n')
    for round_ in range(2):
        invoke(["ingest", "metrics", log, "--run", "r", "-q"])
        invoke(["ingest", "monitoring", folder, "--run", "r", "-q"])
        log.write_text(f'{{"step": 0, "loss": 0.5}}\n{{"step": {round_ + 1}, "loss": 0.4}}\n')
    rows = lake_query(lake, "runs", "select source_file, count(*) from t group by 1 order by 1")
    assert rows == [(str(log.resolve()), 1), (str(folder.resolve()), 1)]
