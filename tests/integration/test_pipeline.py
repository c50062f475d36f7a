"""Ingest -> dbt build -> marts on tests/data/ifeval_small, checked against hand-computed values.

The fixture (three prompts, iterations 0..2, two samples per group):

    A  it0 [0.0, 0.5]  strict [0, 0]
       it1 [1.0, 0.5]  strict [1, 0]
       it2 [0.0, 0.0]  strict [0, 0]      zero variance, all failed
    B  it0..2 [1.0, 1.0] strict [1, 1]     zero variance, all solved, every iteration
    C  it1 [0.25, 0.5] strict [0, 0]
       it2 [0.75, 0.75] strict [1, 0]     zero variance in score, all solved

2.jsonl also has a malformed line (3), a line without score (6) and a
truncated last line that a live run is still writing.
"""

from __future__ import annotations

import json
import math
import re
import shutil
from pathlib import Path

import duckdb
import numpy as np
import pytest
import yaml
from obs.runner.dbt import project_dir

from tests.conftest import DATA, run_cli
from tests.conftest import SMALL_A as A
from tests.conftest import SMALL_B as B
from tests.conftest import SMALL_C as C
from tests.conftest import prompt_hash as _hash

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One ingest and one build shared by the read-only tests of this module."""
    root = tmp_path_factory.mktemp("pipeline")
    dumps = root / "ifeval_small"
    shutil.copytree(DATA / "ifeval_small", dumps)
    lake, warehouse = root / "lake", root / "warehouse" / "obs.duckdb"
    base = ["--lake", lake, "--warehouse", warehouse]
    ingest = run_cli([*base, "ingest", "rollouts", dumps, "--run", "small"])
    assert "16 rows landed, 2 rejected" in ingest.stdout
    # --unit-tests: dbt's unit tests (the SQL on hand-made rows) run here, in
    # `make test`; an everyday `obs build` leaves them out.
    build = run_cli([*base, "build", "-v", "--unit-tests"])
    assert build.stdout.strip() == str(warehouse)
    finished = [line for line in build.stderr.splitlines() if "Finished running" in line]
    # Every unit test the project declares ran (each declares its `model:` once).
    declared = sum(
        line.startswith("    model: ")
        for path in (project_dir() / "models").rglob("*.yml")
        for line in path.read_text().splitlines()
    )
    assert finished and re.search(rf"\b{declared} unit tests\b", finished[0]), finished
    return {"root": root, "lake": lake, "warehouse": warehouse, "dumps": dumps}


def _query(warehouse: Path, sql: str) -> list[dict]:
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        cursor = con.execute(sql)
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
    finally:
        con.close()


def _by_prompt(rows: list[dict]) -> dict[str, dict]:
    names = {_hash(A): "A", _hash(B): "B", _hash(C): "C"}
    return {names[r["prompt_hash"]]: r for r in rows}


def test_prompt_iteration_matches_hand_computed(built: dict[str, Path]) -> None:
    rows = _query(
        built["warehouse"],
        "select * from fct_prompt_iteration where run_id = 'small' order by iteration",
    )
    cells = {(row["iteration"], *_by_prompt([row])): row for row in rows}
    # The grain: one row per iteration and prompt (A and B at 0..2, C at 1..2), with
    # each group's mean score worked out by hand from the docstring's table.
    assert len(rows) == len(cells)
    assert {cell: row["mean_score"] for cell, row in cells.items()} == {
        (0, "A"): 0.25,
        (1, "A"): 0.75,
        (2, "A"): 0.0,
        (0, "B"): 1.0,
        (1, "B"): 1.0,
        (2, "B"): 1.0,
        (1, "C"): 0.375,
        (2, "C"): 0.75,
    }
    a0, a1, a2 = cells[(0, "A")], cells[(1, "A")], cells[(2, "A")]
    assert (a0["n_samples"], a0["mean_score"], a0["min_score"], a0["max_score"]) == (
        2,
        0.25,
        0,
        0.5,
    )
    assert a0["std_score"] == pytest.approx(math.sqrt(0.125))
    assert (a0["prompt_strict_acc"], a0["strict_success_rate"], a0["pass_rate"]) == (0, 0, 0.5)
    assert (a0["mean_at_1"], a0["mean_at_3"], a0["mean_at_20"]) == (0.5, 0.25, 0.25)
    assert a0["best_mean_gap"] == 0.25
    assert a0["consistency_score"] == pytest.approx(1 / (1 + math.sqrt(0.125)))
    assert (a1["prompt_strict_acc"], a1["strict_success_rate"], a1["pass_rate"]) == (1, 0.5, 1.0)
    assert (a2["is_zero_variance"], a2["zero_variance_outcome"], a2["std_score"]) == (
        True,
        "all_failed",
        0,
    )
    assert a2["consistency_score"] == 1.0
    b0 = cells[(0, "B")]
    assert (b0["is_zero_variance"], b0["zero_variance_outcome"]) == (True, "all_solved")
    c1, c2 = cells[(1, "C")], cells[(2, "C")]
    assert c1["mean_score"] == 0.375 and c1["zero_variance_outcome"] is None
    assert c1["std_score"] == pytest.approx(math.sqrt(0.03125))
    # Equal scores but only one rollout followed both instructions.
    assert (c2["zero_variance_outcome"], c2["prompt_strict_acc"], c2["strict_success_rate"]) == (
        "all_solved",
        1,
        0.5,
    )


def test_prompt_learning_matches_hand_computed(built: dict[str, Path]) -> None:
    rows = _by_prompt(
        _query(built["warehouse"], "select * from fct_prompt_learning where run_id = 'small'")
    )
    a, b, c = rows["A"], rows["B"], rows["C"]
    # A: learned at 1, forgotten at 2; slope of (0,.25),(1,.75),(2,0) = -0.25/2.
    assert (a["first_seen_iter"], a["first_success_iter"], a["iterations_to_learn"]) == (0, 1, 1)
    assert a["num_forgetting_events"] == 1 and a["is_forgotten_at_end"]
    assert a["learning_rate"] == pytest.approx(-0.125)
    assert a["recent_variance"] == pytest.approx(0.2916666667 / 2)
    assert a["final_score"] == 0.0
    assert a["upsampling_score"] == pytest.approx(2 + 0.125 + 0.5)
    assert not a["is_plateau"] and a["zero_variance_streak"] == 1
    assert not a["is_stuck_failed"]
    # B: solved from the start, no signal for 3 iterations: stuck solved, plateaued.
    assert (b["first_success_iter"], b["iterations_to_learn"], b["learning_rate"]) == (0, 0, 0)
    assert b["zero_variance_streak"] == 3 and b["is_stuck_solved"] and not b["is_stuck_failed"]
    assert b["is_plateau"] and b["recent_variance"] == 0
    assert b["upsampling_score"] == 0
    # C: first seen at 1, solved at 2; two points give a slope but no plateau verdict.
    assert (c["first_seen_iter"], c["first_success_iter"], c["iterations_to_learn"]) == (1, 2, 1)
    assert c["learning_rate"] == pytest.approx(0.375)
    assert c["recent_variance"] == pytest.approx(0.0703125)
    assert not c["is_plateau"]
    assert c["upsampling_score"] == pytest.approx(0.25 * 2 - 0.375)


def test_forgetting_events_one_row_per_event(built: dict[str, Path]) -> None:
    rows = _query(built["warehouse"], "select * from fct_forgetting_events")
    assert [(r["prompt_hash"], r["solved_iter"], r["forgotten_iter"]) for r in rows] == [
        (_hash(A), 1, 2)
    ]
    assert (rows[0]["score_before"], rows[0]["score_after"], rows[0]["score_drop"]) == (
        0.75,
        0.0,
        0.75,
    )


def test_iteration_summary_matches_hand_computed(built: dict[str, Path]) -> None:
    rows = _query(built["warehouse"], "select * from fct_iteration_summary order by iteration")
    picked = [
        (
            r["iteration"],
            r["n_rollouts"],
            r["n_prompts"],
            r["n_zero_variance"],
            r["n_zero_variance_solved"],
            r["n_zero_variance_failed"],
        )
        for r in rows
    ]
    assert picked == [(0, 4, 2, 1, 1, 0), (1, 6, 3, 1, 1, 0), (2, 6, 3, 3, 2, 1)]
    assert [r["mean_score"] for r in rows] == pytest.approx([0.625, 4.25 / 6, 3.5 / 6])
    assert [r["prompt_strict_acc"] for r in rows] == pytest.approx([0.5, 2 / 3, 2 / 3])
    assert [r["strict_success_rate"] for r in rows] == pytest.approx([0.5, 0.5, 0.5])


def test_dim_prompts_one_row_per_prompt(built: dict[str, Path]) -> None:
    rows = _by_prompt(_query(built["warehouse"], "select * from dim_prompts"))
    assert set(rows) == {"A", "B", "C"}
    assert rows["C"]["instruction_ids"] == [
        "detectable_format:json_format",
        "startend:end_checker",
    ]
    assert rows["A"]["prompt"] == A and rows["A"]["prompt_chars"] == len(A)


def test_summary_command_reports_the_run(built: dict[str, Path]) -> None:
    base = ["--lake", built["lake"], "--warehouse", built["warehouse"]]
    result = run_cli([*base, "summary", "--run", "small", "--format", "json"])
    [run] = json.loads(result.stdout)
    assert (run["iterations"], run["prompts"], run["rollouts"]) == (3, 3, 16)
    assert (run["prompts_learned"], run["prompts_never_solved"]) == (3, 0)
    assert (run["prompts_forgotten"], run["forgetting_events"]) == (1, 1)
    assert (run["prompts_plateaued"], run["prompts_stuck_solved"]) == (1, 1)
    assert [u["prompt_hash"] for u in run["upsampling"]] == [_hash(A), _hash(C), _hash(B)]
    table = run_cli([*base, "summary"]).stdout
    assert (
        "== run small ==" in table
        and "top upsampling candidates (score on the run's scores scaled to 0..1):" in table
    )


def test_summary_unknown_run_is_one_line_error(built: dict[str, Path]) -> None:
    base = ["--lake", built["lake"], "--warehouse", built["warehouse"]]
    result = run_cli([*base, "summary", "--run", "nope"], exit_code=1)
    assert result.stderr.strip() == f"Error: {built['warehouse']}: no run 'nope' (runs: small)"


def test_sql_command_prints_query_result(built: dict[str, Path]) -> None:
    base = ["--lake", built["lake"], "--warehouse", built["warehouse"]]
    result = run_cli(
        [
            *base,
            "sql",
            "select iteration, n_rollouts from fct_iteration_summary order by 1",
            "--format",
            "csv",
        ]
    )
    assert result.stdout.splitlines() == ["iteration,n_rollouts", "0,4", "1,6", "2,6"]
    bad = run_cli([*base, "sql", "select * from no_such_table"], exit_code=1)
    assert bad.stderr.startswith("Error: Catalog Error: Table with name no_such_table")


def test_sql_shows_null_nan_and_empty_results_as_duckdb_does(built: dict[str, Path]) -> None:
    base = ["--lake", built["lake"], "--warehouse", built["warehouse"]]
    query = "select 'a' as t, null::varchar as missing, 'nan'::double as n, 1.5 as x"
    table = run_cli([*base, "sql", query]).stdout.splitlines()
    assert [cell.strip() for cell in table[4].split("│")[1:-1]] == ["a", "NULL", "nan", "1.5"]
    assert "NaN" not in "\n".join(table) and "None" not in "\n".join(table)
    empty = run_cli([*base, "sql", "select iteration from fct_iteration_summary where false"])
    assert "Empty DataFrame" not in empty.stdout
    assert empty.stdout.split()[-2:] == ["0", "rows"] and "iteration" in empty.stdout
    csv = run_cli([*base, "sql", "--format", "csv", query]).stdout.splitlines()
    assert csv == ["t,missing,n,x", "a,,NaN,1.5"]
    as_json = run_cli([*base, "sql", "--format", "json", query]).stdout
    assert json.loads(as_json) == [{"t": "a", "missing": None, "n": "NaN", "x": 1.5}]
    typo = run_cli([*base, "sql", "select * from fct_iteration_summry"], exit_code=1)
    assert 'Did you mean "fct_iteration_summary"?' in typo.stderr
    column = run_cli([*base, "sql", "select iteratio from fct_iteration_summary"], exit_code=1)
    assert "Candidate bindings" in column.stderr


def test_incremental_build_touches_only_new_iterations(tmp_path: Path) -> None:
    dumps = tmp_path / "dumps"
    shutil.copytree(DATA / "ifeval_small", dumps)
    (dumps / "1.jsonl").rename(tmp_path / "held_back.jsonl")
    lake, warehouse = tmp_path / "lake", tmp_path / "obs.duckdb"
    base = ["--lake", lake, "--warehouse", warehouse]
    # Everything here lands within seconds, inside the default look-back
    # window (which re-reads recent parts on purpose); 0 shows the pure rule.
    no_lookback = ["--vars", "{incremental_lookback_seconds: 0}"]
    run_cli([*base, "ingest", "rollouts", dumps, "--run", "inc", "-q"])
    run_cli([*base, "build", "--select", "+fct_prompt_iteration", *no_lookback])
    # (in the table behind the fct_prompt_iteration view, which has no rowid)
    before = _query(
        warehouse,
        "select iteration, prompt_hash, rowid as row_position, mean_score "
        "from int_prompt_iteration order by 1, 2",
    )
    (tmp_path / "held_back.jsonl").rename(dumps / "1.jsonl")
    run_cli([*base, "ingest", "rollouts", dumps, "--run", "inc", "-q"])
    run_cli([*base, "build", "--select", "+fct_prompt_iteration", *no_lookback])
    after = _query(
        warehouse,
        "select iteration, prompt_hash, rowid as row_position, mean_score "
        "from int_prompt_iteration order by 1, 2",
    )
    # Iterations 0 and 2 were not recomputed: same rows at the same positions.
    assert [r for r in after if r["iteration"] != 1] == before
    assert sorted({r["iteration"] for r in after}) == [0, 1, 2]
    assert len(after) == len(before) + 3


@pytest.mark.parametrize("engine", ["obs", "dbt"])
def test_difficulty_clusters_follow_the_kmeans_vars(
    tmp_path: Path, engine: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """kmeans_clusters reaches the k-means model, on obs's executor and on dbt.

    The default build is the executor's in both cases (test_engine_parity shows dbt
    builds the same under the default vars); the build under other vars is the
    engine's own, so on dbt it is the vars rule of obs's dbt path that rebuilds."""
    from obs.demo.rollouts import DemoSpec, write_demo_run

    dumps = tmp_path / "dumps"
    write_demo_run(dumps, DemoSpec(prompts=24, iterations=2, samples_per_prompt=4, seed=5))
    lake, warehouse = tmp_path / "lake", tmp_path / "obs.duckdb"
    base = ["--lake", lake, "--warehouse", warehouse]
    run_cli([*base, "ingest", "rollouts", dumps, "--run", "k", "-q"])
    buckets = (
        "select iteration, list(distinct bucket order by bucket) as buckets "
        "from fct_difficulty_buckets where strategy = 'adaptive' group by 1 order by 1"
    )
    run_cli([*base, "build", "-q"])
    default = _query(warehouse, buckets)
    assert [r["buckets"] for r in default] == [["easy", "hard", "medium-easy", "medium-hard"]] * 2
    if engine == "dbt":
        monkeypatch.setenv("OBS_ENGINE", "dbt")
    run_cli([*base, "build", "-q", "--vars", "{kmeans_clusters: 2}"])
    two = _query(warehouse, buckets)
    assert [r["buckets"] for r in two] == [["easy", "hard"]] * 2


NAMES = ["hard", "medium-hard", "medium-easy", "easy"]


def _numpy_kmeans(rows: list[dict], k: int, steps: int) -> list[tuple[str, float | None]]:
    """The rule of int_difficulty_clusters, in numpy, for one (run, iteration): the
    bucket and cluster mean of each row, in the rows' order."""
    raw = np.array(
        [[r[f] for f in ("mean_at_5", "success_rate", "std_score")] for r in rows], dtype=float
    )
    values = np.where(np.isfinite(raw), raw, 0.0)
    spread = values.std(axis=0)
    spread[spread == 0] = 1.0
    points = (values - values.mean(axis=0)) / spread
    # the start: sorted by mean_at_5 then prompt_hash, k slices, the first ones longer
    order = sorted(range(len(rows)), key=lambda i: (values[i, 0], rows[i]["prompt_hash"]))
    labels = np.empty(len(rows), dtype=int)
    for cluster, part in enumerate(np.array_split(np.array(order), k)):
        labels[part] = cluster
    for _ in range(steps):
        centroids = np.array(
            [
                points[labels == c].mean(axis=0) if (labels == c).any() else [np.nan] * 3
                for c in range(k)
            ]
        )
        distances = np.round(((points[:, None, :] - centroids[None]) ** 2).sum(axis=2), 9)
        moved = np.where(np.isnan(distances), np.inf, distances).argmin(axis=1)  # first minimum
        if np.array_equal(moved, labels):
            break
        labels = moved
    mean_at_5 = np.where(np.isfinite(raw[:, 0]), raw[:, 0], np.nan)
    means = {}
    for c in np.unique(labels):
        kept = mean_at_5[labels == c]
        kept = kept[~np.isnan(kept)]
        means[int(c)] = float(f"{kept.mean():.12g}") if len(kept) else None
    ranked = sorted(means, key=lambda c: (means[c] is None, means[c] or 0.0, c))
    last = max(len(ranked) - 1, 1)
    name = {c: NAMES[int(np.floor(r * 3 / last + 0.5))] for r, c in enumerate(ranked)}
    if len(ranked) == 1:
        name = {ranked[0]: "hard"}
    return [(name[int(c)], means[int(c)]) for c in labels]


def _random_run(folder: Path, prompts: int, seed: int) -> None:
    """Two iterations of `prompts` prompts, 8 rollouts each, with scores drawn
    uniformly (so continuous mean_at_5 and std_score) and random strict flags."""
    rng = np.random.default_rng(seed)
    folder.mkdir()
    for iteration in range(2):
        rows = []
        for p in range(prompts):
            centre = rng.uniform()
            for sample in range(8):
                score = float(np.clip(centre + rng.normal(0, 0.2), 0, 1))
                rows.append(
                    {
                        "input": f"prompt {p}",
                        "output": f"answer {iteration}-{p}-{sample}",
                        "score": score,
                        "prompt_strict_acc": float(rng.uniform() < score),
                    }
                )
        (folder / f"{iteration}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


@pytest.mark.parametrize("lake", ["demo", "random"])
def test_difficulty_clusters_are_numpys_lloyd(tmp_path: Path, lake: str) -> None:
    """int_difficulty_clusters gives, prompt for prompt, the buckets of Lloyd's
    algorithm written in numpy above (same start, tie rule and cap, the project's
    vars): on the
    demo's run (400 prompts an iteration, discrete scores: many ties) and on a run of
    300 prompts with continuous scores."""
    from obs.demo.rollouts import DemoSpec, write_demo_run

    dumps = tmp_path / "dumps"
    if lake == "demo":
        write_demo_run(dumps, DemoSpec(prompts=400, iterations=3, samples_per_prompt=4, seed=11))
    else:
        _random_run(dumps, 300, seed=8)
    base = ["--lake", tmp_path / "lake", "--warehouse", tmp_path / "obs.duckdb"]
    run_cli([*base, "ingest", "rollouts", dumps, "--run", "k", "-q"])
    run_cli([*base, "build", "-q"])
    config = yaml.safe_load((project_dir() / "dbt_project.yml").read_text())["vars"]
    prompts = _query(
        tmp_path / "obs.duckdb",
        "select iteration, prompt_hash, mean_at_5, success_rate, std_score "
        "from int_prompt_iteration order by iteration, prompt_hash",
    )
    built = {
        (r["iteration"], r["prompt_hash"]): (r["bucket"], r["cluster_mean_at_5"])
        for r in _query(tmp_path / "obs.duckdb", "select * from int_difficulty_clusters")
    }
    assert len(built) == len(prompts) == (1200 if lake == "demo" else 600)
    for iteration in sorted({r["iteration"] for r in prompts}):
        rows = [r for r in prompts if r["iteration"] == iteration]
        expected = _numpy_kmeans(rows, config["kmeans_clusters"], config["kmeans_iterations"])
        got = [built[(iteration, r["prompt_hash"])] for r in rows]
        assert [g[0] for g in got] == [e[0] for e in expected]
        assert {g[0] for g in got} == set(NAMES)
        for (_, mean_got), (_, mean_expected) in zip(got, expected, strict=True):
            assert mean_got == pytest.approx(mean_expected, rel=1e-11)


def test_rejects_view_reads_the_lake_wherever_obs_lake_puts_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`rejects` is a view over the lake's `_rejects` table: it follows OBS_LAKE, and a
    build after the first rejected row lands shows it (the view was empty before)."""
    lake = tmp_path / "elsewhere" / "lake"
    monkeypatch.setenv("OBS_LAKE", str(lake))
    base = ["--warehouse", tmp_path / "w.duckdb"]
    dumps = tmp_path / "dumps"
    dumps.mkdir()
    row = {"input": "p", "output": "r", "score": 1.0}
    (dumps / "0.jsonl").write_text(json.dumps(row) + "\n")
    run_cli([*base, "ingest", "rollouts", dumps, "--run", "r", "-q"])
    run_cli([*base, "build"])
    query = ["sql", "select table_name, source_file, source_line, reason from rejects"]
    assert run_cli([*base, *query, "--format", "json"]).stdout == "[]\n"
    (dumps / "1.jsonl").write_text(json.dumps(row) + "\n{not json\n" + json.dumps(row) + "\n")
    run_cli([*base, "ingest", "rollouts", dumps, "--run", "r", "-q"])
    run_cli([*base, "build"])
    found = json.loads(run_cli([*base, *query, "--format", "json"]).stdout)
    assert [(r["table_name"], r["source_file"], r["source_line"]) for r in found] == [
        ("rollouts", str(dumps / "1.jsonl"), 2)
    ]
    assert found[0]["reason"].startswith("malformed JSON")


def test_ingest_cli_errors_are_one_line(tmp_path: Path) -> None:
    base = ["--lake", tmp_path / "lake", "--warehouse", tmp_path / "w.duckdb"]
    missing = run_cli([*base, "ingest", "rollouts", tmp_path / "nope"], exit_code=1)
    assert missing.stderr == (
        f"Error: {tmp_path / 'nope'}: no such file or folder; "
        "pass a dump folder or a rollout table\n"
    )
    no_build = run_cli([*base, "build"], exit_code=1)
    assert no_build.stderr == (
        f"Error: {tmp_path / 'lake'}: nothing landed in this lake yet (the default, lake/, is"
        " relative to the current folder; --lake DIR or OBS_LAKE points elsewhere); run `obs"
        " ingest rollouts PATH` or `obs ingest metrics PATH` first\n"
    )


def test_python_builds_a_warehouse_without_the_command_line(tmp_path: Path) -> None:
    """obs.runner.build is `obs build` for Python: no click, errors as exceptions."""
    from obs.ingest.rollouts import ingest_rollouts
    from obs.runner.build import BuildFailed, build_warehouse
    from obs.runner.errors import DbtError

    lake, warehouse = tmp_path / "lake", tmp_path / "obs.duckdb"
    with pytest.raises(DbtError, match="nothing landed in this lake yet"):
        build_warehouse(warehouse, lake)
    dumps = tmp_path / "dumps"
    shutil.copytree(DATA / "ifeval_small", dumps)
    landed = ingest_rollouts(dumps, lake=lake, run_id="py")
    assert landed.rows_landed == 16
    assert build_warehouse(warehouse, lake) > 0
    con = duckdb.connect(str(warehouse), read_only=True)
    rows = con.execute(
        "select iteration, n_prompts, n_rollouts from fct_iteration_summary order by 1"
    ).fetchall()
    con.close()
    assert rows == [(0, 2, 4), (1, 3, 6), (2, 3, 6)]
    assert build_warehouse(warehouse, lake) == 0  # nothing landed since: up to date
    # a broken data test is an exception carrying a line per broken rule
    con = duckdb.connect(str(warehouse))
    con.execute("update fct_prompt_learning set final_strict_acc = 2 where rowid < 2")
    con.close()
    with pytest.raises(BuildFailed) as failed:
        build_warehouse(warehouse, lake, ["--select", "fct_prompt_learning_rules"])
    assert str(failed.value).startswith("dbt build failed (1 failed, 0 passed)")
    assert failed.value.failures == [
        "fct_prompt_learning_rules: final_strict_acc outside [0, 1] (2 rows)"
    ]


def test_a_copied_warehouse_answers_every_view(built: dict[str, Path]) -> None:
    """A view names what it reads without the database (the file's stem), so a
    warehouse copied or attached under another name still answers every view."""
    copy = built["root"] / "copied" / "elsewhere.duckdb"
    copy.parent.mkdir()
    shutil.copyfile(built["warehouse"], copy)
    con = duckdb.connect(str(copy), read_only=True)
    try:
        views = [
            name
            for (name,) in con.execute(
                "select view_name from duckdb_views() where not internal order by 1"
            ).fetchall()
        ]
        failing = {}
        for view in views:
            try:
                con.execute(f'select count(*) from "{view}"').fetchall()
            except duckdb.Error as exc:
                failing[view] = str(exc).splitlines()[0]
    finally:
        con.close()
    assert len(views) >= 10, views
    assert failing == {}
