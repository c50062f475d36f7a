"""MLflow file stores as mlflow itself writes them, read back into RunHistory."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import pytest
from obs.ingest.errors import IngestError
from obs.ingest.trackers import mlflow_store as ml
from obs.ingest.trackers.base import RunHistory

MS = 1_700_000_000_000  # epoch milliseconds given to mlflow, so times compare exactly


@dataclass
class Store:
    root: Path
    experiments: dict[str, str]  # name -> experiment id
    runs: dict[str, str]  # run name -> run id


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Store:
    """Two experiments, three runs: finished, failed and running, written by MlflowClient."""
    from mlflow.entities import Metric, Param, RunTag
    from mlflow.tracking import MlflowClient

    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # MLflow 3 writes file stores only so
    root = tmp_path / "project" / "mlruns"
    client = MlflowClient(tracking_uri=root.resolve().as_uri())
    grpo = client.create_experiment("grpo-qwen")
    dpo = client.create_experiment("dpo-llama")

    alpha = client.create_run(grpo, run_name="alpha", start_time=MS, tags={"team": "rl"})
    alpha_id = alpha.info.run_id
    client.log_param(alpha_id, "lr", 0.001)
    client.log_param(alpha_id, "batch_size", 32)
    client.set_tag(alpha_id, "baseline", "")
    client.set_tag(alpha_id, "mlflow.note.content", "a note")
    client.log_metric(alpha_id, "loss", 1.5, timestamp=MS + 1000, step=5)
    client.log_metric(alpha_id, "loss", math.nan, timestamp=MS + 2000, step=6)
    client.log_metric(alpha_id, "loss", math.inf, timestamp=MS + 3500, step=7)
    client.log_metric(alpha_id, "reward", -math.inf, timestamp=MS + 3500, step=7)
    notes = tmp_path / "notes.txt"
    notes.write_text("seed 3")
    client.log_artifact(alpha_id, str(notes))
    client.set_terminated(alpha_id, "FINISHED")

    beta = client.create_run(grpo, run_name="beta", start_time=MS + 60_000)
    client.log_batch(
        beta.info.run_id,
        metrics=[Metric("kl", 0.25, MS + 61_000, 100), Metric("kl", 0.5, MS + 62_000, 101)],
        params=[Param("lr", "3e-4")],
        tags=[RunTag("stage", "sft")],
    )
    client.set_terminated(beta.info.run_id, "FAILED")

    gamma = client.create_run(dpo, run_name="gamma", start_time=MS + 120_000)
    client.log_metric(gamma.info.run_id, "acc", 0.75, timestamp=MS + 121_000, step=3)

    runs = {"alpha": alpha_id, "beta": beta.info.run_id, "gamma": gamma.info.run_id}
    return Store(root, {"grpo-qwen": grpo, "dpo-llama": dpo}, runs)


def by_name(histories: list[RunHistory]) -> dict[str | None, RunHistory]:
    return {h.name: h for h in histories}


def points(history: RunHistory) -> list[tuple[int, str, float]]:
    return list(zip(history.steps, history.keys, history.values, strict=True))


def read_all(origin: Path) -> list[RunHistory]:
    return ml.read("mlflow", origin, origin)


def test_a_store_gives_every_run_with_points_params_tags_and_states(store: Store) -> None:
    runs = by_name(read_all(store.root))

    assert sorted(runs) == ["alpha", "beta", "gamma"]
    alpha, beta, gamma = runs["alpha"], runs["beta"], runs["gamma"]
    assert points(alpha)[:1] == [(5, "loss", 1.5)] and math.isnan(alpha.values[1])
    assert points(alpha)[2:] == [(7, "loss", math.inf), (7, "reward", -math.inf)]
    assert alpha.steps[1] == 6
    assert alpha.wall_times == pytest.approx(
        [1_700_000_001.0, 1_700_000_002.0] + [1_700_000_003.5] * 2
    )
    assert points(beta) == [(100, "kl", 0.25), (101, "kl", 0.5)]
    assert points(gamma) == [(3, "acc", 0.75)]
    assert gamma.wall_times == pytest.approx([1_700_000_121.0])

    assert (alpha.run_id, alpha.source, alpha.origin) == (store.runs["alpha"], "mlflow", store.root)
    assert [alpha.project, beta.project, gamma.project] == ["grpo-qwen", "grpo-qwen", "dpo-llama"]
    assert [alpha.state, beta.state, gamma.state] == ["finished", "failed", "running"]
    assert alpha.created_at == datetime(2023, 11, 14, 22, 13, 20)
    assert alpha.config == {"batch_size": "32", "lr": "0.001"}  # MLflow's strings, kept
    assert beta.config == {"lr": "3e-4"}
    assert alpha.tags == ["baseline", "team=rl"] and beta.tags == ["stage=sft"]
    assert gamma.tags == []
    assert alpha.summary["reward"] == -math.inf and beta.summary == {"kl": 0.5}
    assert alpha.artifacts == ["notes.txt"] and beta.artifacts == []
    assert all(h.rejects == [] and h.notes == [] for h in runs.values())


def test_find_a_store_an_experiment_or_a_run_folder(store: Store) -> None:
    project = store.root.parent
    experiment = store.root / store.experiments["grpo-qwen"]
    run = experiment / store.runs["beta"]

    assert ml.find(project) == [("mlflow", store.root)]
    assert ml.find(store.root) == [("mlflow", store.root)]
    assert ml.find(experiment) == [("mlflow", experiment)]
    assert ml.find(run) == [("mlflow", run)]
    assert ml.find(run / "meta.yaml") == [("mlflow", run)]
    assert ml.find(run / "metrics") == [] and ml.find(project / "missing") == []

    assert sorted(h.name for h in read_all(experiment)) == ["alpha", "beta"]
    (beta,) = read_all(run)
    assert (beta.name, beta.project, beta.origin) == ("beta", "grpo-qwen", run)
    assert points(beta) == [(100, "kl", 0.25), (101, "kl", 0.5)]


def test_stat_files_are_metrics_params_tags_and_meta_files(store: Store) -> None:
    run = store.root / store.experiments["grpo-qwen"] / store.runs["alpha"]

    files = ml.stat_files("mlflow", store.root)

    expected = [run / "meta.yaml", run / "metrics/loss", run / "params/lr", run / "tags/team"]
    assert set(expected) <= set(files)
    assert store.root / store.experiments["dpo-llama"] / "meta.yaml" in files
    assert not any("artifacts" in f.parts for f in files)
    in_run = sorted(f for f in files if run in f.parents)
    assert ml.stat_files("mlflow", run) == sorted([run.parent / "meta.yaml", *in_run])


def test_a_damaged_metric_line_rejects_that_run_and_the_others_land(store: Store) -> None:
    run = store.root / store.experiments["grpo-qwen"] / store.runs["alpha"]
    loss = run / "metrics" / "loss"
    with loss.open("a") as handle:
        handle.write("written by hand\n")

    histories = read_all(store.root)

    alpha = next(h for h in histories if h.run_id == store.runs["alpha"])
    assert alpha.points == 0 and alpha.project == "grpo-qwen"
    (reject,) = alpha.rejects
    assert (reject.file, reject.line, reject.raw) == (loss, 4, "written by hand")
    assert reject.reason.startswith("MLflow could not read this metric file")
    assert str(loss) in alpha.notes[0]
    others = by_name(h for h in histories if h is not alpha)
    assert sorted(others) == ["beta", "gamma"]
    assert points(others["beta"]) == [(100, "kl", 0.25), (101, "kl", 0.5)]
    assert points(others["gamma"]) == [(3, "acc", 0.75)]

    (single,) = read_all(run)  # the run folder on its own: the same reject
    assert single.points == 0 and single.rejects[0].line == 4


def test_a_damaged_run_meta_yaml_rejects_that_run(store: Store) -> None:
    run = store.root / store.experiments["grpo-qwen"] / store.runs["beta"]
    (run / "meta.yaml").write_text("run_id: [not closed\n")

    runs = {h.run_id: h for h in read_all(store.root)}

    beta = runs[store.runs["beta"]]
    assert beta.points == 0 and beta.name is None
    (reject,) = beta.rejects
    assert (reject.file, reject.line) == (run / "meta.yaml", 0)
    assert "repair or restore the run's meta.yaml" in beta.notes[0]
    assert points(runs[store.runs["alpha"]])[0] == (5, "loss", 1.5)
    assert points(runs[store.runs["gamma"]]) == [(3, "acc", 0.75)]


def test_a_damaged_experiment_meta_yaml_rejects_its_runs_only(store: Store) -> None:
    experiment = store.root / store.experiments["dpo-llama"]
    (experiment / "meta.yaml").write_text("::: not an experiment {")

    runs = {h.run_id: h for h in read_all(store.root)}

    assert sorted(h.name or "" for h in runs.values()) == ["", "alpha", "beta"]
    gamma = runs[store.runs["gamma"]]
    assert gamma.points == 0
    assert [(r.file, r.line) for r in gamma.rejects] == [(experiment / "meta.yaml", 0)]


def test_deleted_runs_and_experiments_are_read_with_a_note(store: Store) -> None:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=store.root.resolve().as_uri())
    client.delete_run(store.runs["beta"])
    client.delete_experiment(store.experiments["dpo-llama"])  # moved to mlruns/.trash

    runs = by_name(read_all(store.root))

    assert points(runs["beta"]) == [(100, "kl", 0.25), (101, "kl", 0.5)]
    assert runs["beta"].notes == [
        f"run {store.runs['beta']} is deleted in MLflow (still in its store)"
    ]
    assert points(runs["gamma"]) == [(3, "acc", 0.75)]
    assert runs["gamma"].notes == [  # deleting an experiment deletes its runs
        f"run {store.runs['gamma']} is deleted in MLflow (still in its store)",
        "experiment 'dpo-llama' is deleted in MLflow",
    ]
    assert runs["alpha"].notes == []


def test_reading_leaves_mlflow_environment_variables_as_they_were(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MLFLOW_ALLOW_FILE_STORE")
    monkeypatch.setenv("MLFLOW_DISABLE_TELEMETRY", "false")

    assert len(read_all(store.root)) == 3
    assert "MLFLOW_ALLOW_FILE_STORE" not in os.environ
    assert os.environ["MLFLOW_DISABLE_TELEMETRY"] == "false"


def test_reading_leaves_the_store_as_it_was_found(store: Store) -> None:
    """Opening a store makes MLflow create ``.trash``; a read removes it again when it
    made it, and keeps one that was there (and what it holds). Each read runs in a
    fresh process, as an ingest does (this one's MLflow keeps the writer's store open)."""

    def listing(root: Path) -> list[tuple[str, int]]:
        return sorted(
            (str(path.relative_to(root)), path.stat().st_size if path.is_file() else -1)
            for path in root.rglob("*")
        )

    def read_elsewhere(origin: Path) -> int:
        code = (
            "import sys; from obs.ingest.trackers import mlflow_store as ml; "
            "print(len(ml.read('mlflow', __import__('pathlib').Path(sys.argv[1]), "
            "__import__('pathlib').Path(sys.argv[1]))))"
        )
        done = subprocess.run(
            [sys.executable, "-c", code, str(origin)], capture_output=True, text=True, check=True
        )
        return int(done.stdout.strip().splitlines()[-1])

    (store.root / ".trash").rmdir()  # the writer's, empty
    before = listing(store.root)
    assert read_elsewhere(store.root) == 3
    assert read_elsewhere(store.root / store.experiments["grpo-qwen"]) == 2
    assert listing(store.root) == before
    (store.root / ".trash").mkdir()
    (store.root / ".trash" / "kept.txt").write_text("x")
    assert read_elsewhere(store.root) == 3
    assert (store.root / ".trash" / "kept.txt").read_text() == "x"


def test_a_folder_that_is_not_mlflow_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(IngestError, match=r"not an MLflow file store.*; point at the mlruns"):
        read_all(tmp_path)


def test_without_mlflow_reading_says_what_to_install(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in [n for n in sys.modules if n == "mlflow" or n.startswith("mlflow.")]:
        monkeypatch.setitem(sys.modules, name, None)  # an import of any of them now fails

    with pytest.raises(IngestError) as raised:
        read_all(store.root)

    assert str(raised.value) == (
        f"{store.root}: reading an MLflow file store needs the mlflow package: "
        "pip install 'obs-warehouse[mlflow]' (in a checkout: pip install -e '.[trackers]')"
    )
    assert ml.find(store.root) == [("mlflow", store.root)]  # finding needs no library


def test_the_module_imports_without_mlflow() -> None:
    code = (
        "import sys; sys.modules['mlflow'] = None; "
        "import obs.ingest.trackers.mlflow_store as m; print(sorted(m.FORMATS))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "['mlflow']"
