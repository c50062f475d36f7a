"""A run with many reward functions: the build stays bounded, pairs are capped.

Issue 41, item 2: a TRL ``completions_N.parquet`` of 4 rows and 10,000 reward
columns made every pairwise reward model (one row per pair of functions) grow
with the square of the columns, and the shared build passed 5 GB. Here that
file and a run of 40 functions land in one lake, a real ``obs build`` builds
both in a process of its own (its peak resident memory measured by wait4), and
the marts say which functions were paired.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.faults.conftest import OBS, obs

# a 10,000-column build and a render of it: about 35 s in all
pytestmark = pytest.mark.slow

WIDE_FUNCTIONS = 10_000
SMALL_FUNCTIONS = 40
ROWS = 4
# The 40-function run: function j scores s_j = 7j mod 40 on row j mod 4 and 0 on the
# other three (7 is prime to 40, so s_j runs over 0..39 once). Every weight is 1
# (nothing names one), so the pairing rule falls to the variance, 3 s_j^2 / 16:
# the 32 kept are those with s_j >= 8, and the 8 left out have s_j = 0..7, i.e.
# j = 0, 23, 6, 29, 12, 35, 18, 1 (j = 23 s_j mod 40, 23 being 7's inverse mod 40).
LEFT_OUT = {"f00", "f01", "f06", "f12", "f18", "f23", "f29", "f35"}
# Peak resident memory of the whole build (before the cap: past 5 GB).
PEAK_LIMIT_KB = 1536 * 1024


def _write_completions(folder: Path, columns: dict[str, list[float]]) -> Path:
    """A TRL GRPOTrainer ``completions_00001.parquet``: step, prompt, completion, one
    float column per reward function, advantage (as TRL's log_completions writes it)."""
    (folder / "completions").mkdir(parents=True)
    table = {
        "step": pa.array([1] * ROWS, pa.int64()),
        "prompt": pa.array([f"prompt {i % 2}" for i in range(ROWS)], pa.large_string()),
        "completion": pa.array([f"completion {i}" for i in range(ROWS)], pa.large_string()),
        **{name: pa.array(values, pa.float64()) for name, values in columns.items()},
        "advantage": pa.array([0.0] * ROWS, pa.float64()),
    }
    path = folder / "completions" / "completions_00001.parquet"
    pq.write_table(pa.table(table), path)
    return path


def _small_scores(j: int) -> list[float]:
    return [float(7 * j % 40) if i == j % ROWS else 0.0 for i in range(ROWS)]


@dataclass
class Built:
    warehouse: Path
    lake: Path
    peak_kb: int
    build_output: str
    small: dict[str, list[float]]

    def rows(self, sql: str, params: list[Any] | None = None) -> list[tuple[Any, ...]]:
        con = duckdb.connect(str(self.warehouse), read_only=True)
        try:
            return con.execute(sql, params or []).fetchall()
        finally:
            con.close()


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    root = tmp_path_factory.mktemp("wide-rewards")
    lake, warehouse = root / "lake", root / "obs.duckdb"
    wide = {
        f"reward_{j:05d}": [float((i * (j + 1)) % 7) for i in range(ROWS)]
        for j in range(WIDE_FUNCTIONS)
    }
    _write_completions(root / "wide", wide)
    small = {f"f{j:02d}": _small_scores(j) for j in range(SMALL_FUNCTIONS)}
    _write_completions(root / "small", small)
    for run in ("wide", "small"):
        done = obs(lake, warehouse, "ingest", "rollouts", root / run, "--run", run)
        assert f"run {run}: 4 rows landed, 0 rejected" in done.stdout
    # the build in a process of its own, its peak resident memory measured by wait4
    code = (
        "import resource, subprocess, sys; "
        "done = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
        "print(done.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); "
        "print(done.stdout + done.stderr)"
    )
    command = [OBS, "--lake", str(lake), "--warehouse", str(warehouse), "build"]
    done = subprocess.run(
        [sys.executable, "-c", code, *command], capture_output=True, text=True, timeout=900
    )
    head, _, output = done.stdout.partition("\n")
    status, peak_kb = map(int, head.split())
    assert status == 0, output
    return Built(warehouse, lake, peak_kb, output, small)


def test_wide_run_builds_in_bounded_memory(built: Built) -> None:
    assert built.peak_kb < PEAK_LIMIT_KB, f"peak {built.peak_kb // 1024} MB"
    # every reward landed and every per-function mart has every function
    assert built.rows(
        "select count(*), count(distinct reward_function) from int_reward_samples "
        "where run_id = 'wide'"
    ) == [(ROWS * WIDE_FUNCTIONS, WIDE_FUNCTIONS)]
    assert built.rows(
        "select count(*) from fct_reward_function_importance where run_id = 'wide'"
    ) == [(WIDE_FUNCTIONS,)]


def test_wide_run_skips_its_pairs_with_a_note(built: Built) -> None:
    assert built.rows(
        "select pairing, reward_functions, paired_functions, note "
        "from fct_reward_pair_selection where run_id = 'wide'"
    ) == [
        (
            "skipped",
            WIDE_FUNCTIONS,
            0,
            "reward function pairs skipped: 10000 functions, more than "
            "reward_pair_function_limit (1000); no correlations or redundancy for this run, "
            "its rewards are in every other mart",
        )
    ]
    assert built.rows("select count(*) from fct_reward_correlations where run_id = 'wide'") == [
        (0,)
    ]
    assert built.rows(
        "select count(*) from int_reward_sample_pair_steps where run_id = 'wide'"
    ) == [(0,)]


def test_wide_run_keeps_its_correlation_with_the_total(built: Built) -> None:
    """Pairs skipped, each function's correlation with R_i (the plain sum: weight 1 each)
    still comes from one pass over the samples: reward_00006 scores (i x 7) mod 7 = 0 on
    every row (no spread: null); reward_00000 scores i mod 7 = 0, 1, 2, 3."""
    totals = [
        math.fsum(float((i * (j + 1)) % 7) for j in range(WIDE_FUNCTIONS)) for i in range(ROWS)
    ]
    expected = _pearson([0.0, 1.0, 2.0, 3.0], totals)
    rows = dict(
        built.rows(
            "select reward_function, correlation_with_total from fct_reward_function_importance"
            " where run_id = 'wide' and reward_function in ('reward_00000', 'reward_00006')"
        )
    )
    assert rows["reward_00006"] is None
    assert rows["reward_00000"] == pytest.approx(expected, abs=1e-9)


def _pearson(x: list[float], y: list[float]) -> float:
    mx, my = math.fsum(x) / len(x), math.fsum(y) / len(y)
    cov = math.fsum((a - mx) * (b - my) for a, b in zip(x, y, strict=True))
    vx = math.fsum((a - mx) ** 2 for a in x)
    vy = math.fsum((b - my) ** 2 for b in y)
    return cov / math.sqrt(vx * vy)


def test_small_run_pairs_its_top_32_by_variance(built: Built) -> None:
    paired = {
        name
        for (name,) in built.rows(
            "select reward_function from int_reward_pair_functions "
            "where run_id = 'small' and is_paired"
        )
    }
    assert len(paired) == 32
    assert paired == set(built.small) - LEFT_OUT
    # rank 1 is s_j = 39 (j = 17: 7 x 17 = 119 = 39 mod 40), rank 32 is s_j = 8 (j = 24)
    ranks = dict(
        built.rows(
            "select pair_rank, reward_function from int_reward_pair_functions "
            "where run_id = 'small' and pair_rank in (1, 32, 33)"
        )
    )
    assert ranks == {1: "f17", 32: "f24", 33: "f01"}
    assert built.rows(
        "select pairing, reward_functions, paired_functions, note "
        "from fct_reward_pair_selection where run_id = 'small'"
    ) == [
        (
            "top",
            40,
            32,
            "reward function pairs over the top 32 of 40 functions (largest |weight|, then "
            "largest variance, then name; the var reward_pair_max_functions)",
        )
    ]


def test_small_run_correlates_only_the_paired_functions(built: Built) -> None:
    """Two functions scoring on the same row correlate 1 (redundant); on different rows,
    two indicator-like vectors of 4 samples: cov -1/16 over variance 3/16, r = -1/3."""
    rows = built.rows(
        "select function_a, function_b, correlation, is_redundant "
        "from fct_reward_correlations where run_id = 'small'"
    )
    assert len(rows) == 32 * 31 // 2
    names = {name for a, b, _, _ in rows for name in (a, b)}
    assert names == set(built.small) - LEFT_OUT
    for a, b, correlation, redundant in rows:
        same_row = int(a[1:]) % ROWS == int(b[1:]) % ROWS
        assert correlation == pytest.approx(1.0 if same_row else -1 / 3, abs=1e-12)
        assert redundant is same_row


def test_small_run_correlation_with_total_covers_unpaired_functions(built: Built) -> None:
    totals = [math.fsum(values[i] for values in built.small.values()) for i in range(ROWS)]
    rows = dict(
        built.rows(
            "select reward_function, correlation_with_total "
            "from fct_reward_function_importance where run_id = 'small'"
        )
    )
    assert len(rows) == SMALL_FUNCTIONS
    assert rows["f00"] is None  # s_0 = 0: never varies
    for name in ("f01", "f23", "f17", "f24"):  # left out and kept alike
        assert rows[name] == pytest.approx(_pearson(built.small[name], totals), abs=1e-12)


def test_rewards_command_shows_the_top_functions_and_the_pair_note(built: Built) -> None:
    done = obs(built.lake, built.warehouse, "rewards", "wide")
    lines = done.stdout.splitlines()
    [head] = [line for line in lines if line.startswith("Function importance")]
    assert head.startswith("Function importance (the first 20 of 10000 by rank;")
    start = lines.index(head) + 1
    assert all(line.startswith("  reward_") for line in lines[start : start + 20])
    assert not lines[start + 20].startswith("  reward_")
    assert (
        "Pairs: reward function pairs skipped: 10000 functions, more than "
        "reward_pair_function_limit (1000)" in done.stdout
    )
    as_json = json.loads(
        obs(built.lake, built.warehouse, "rewards", "wide", "--format", "json").stdout
    )
    assert len(as_json["functions"]) == 20
    assert as_json["functions_total"] == WIDE_FUNCTIONS
    assert as_json["pair_note"].startswith("reward function pairs skipped")


def test_rewards_page_draws_the_top_functions_and_says_so(built: Built, tmp_path: Path) -> None:
    out = tmp_path / "rewards.html"
    obs(
        built.lake,
        built.warehouse,
        "render-dashboard",
        "--kind",
        "rewards",
        "--run",
        "wide",
        "--out",
        out,
    )
    html = out.read_text()
    assert out.stat().st_size < 10 * 1024 * 1024
    assert (
        "The charts of this tab draw the first 20 of the run&#39;s 10000 reward functions" in html
    )
    assert "reward function pairs skipped: 10000 functions" in html
    # the functions tab draws the first 20 by importance rank, the quality chart the 20
    # lowest scores: 40 names at most of the 10,000
    top = {
        name
        for (name,) in built.rows(
            "select reward_function from fct_reward_function_importance "
            "where run_id = 'wide' and rank <= 20"
        )
    }
    drawn = {f"reward_{j:05d}" for j in range(WIDE_FUNCTIONS) if f'"reward_{j:05d}"' in html}
    assert len(top) == 20
    assert top <= drawn
    assert len(drawn) <= 40
