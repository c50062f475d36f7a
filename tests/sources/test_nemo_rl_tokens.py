"""A NeMo-RL GRPO log folder (tests/data/nemo_rl.py), landed and built: what the trainer trained on.

``obs ingest rollouts logs/exp_NNN`` finds the train_data_step files by
their names; each sample lands as a rollout and as a row of token arrays.
``fct_logprob_mismatch`` is compared with the numbers worked out from the
files with numpy (``expected_mismatch``), and the planted mismatch shows at
its step only.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import duckdb
import pytest

from tests.conftest import lake_query, run_cli
from tests.data.nemo_rl import NemoRun, expected_mismatch, write_nemo_run

pytestmark = pytest.mark.integration

MISMATCH_AT = (3,)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[NemoRun, Path, Path]:
    root = tmp_path_factory.mktemp("nemo")
    run = write_nemo_run(root / "logs" / "exp_001", steps=4, mismatch_steps=MISMATCH_AT)
    lake, warehouse = root / "lake", root / "warehouse" / "obs.duckdb"
    base = ["--lake", str(lake), "--warehouse", str(warehouse)]
    run_cli([*base, "ingest", "rollouts", str(run.log_dir)])
    run_cli([*base, "build", "--select", "+fct_logprob_mismatch"])
    return run, lake, warehouse


def test_nemo_folder_is_found_and_lands_tokens_beside_rollouts(
    built: tuple[NemoRun, Path, Path],
) -> None:
    run, lake, _ = built
    written = sum(len(run.lines(step)) for step in run.steps)
    [(rollouts, run_ids)] = lake_query(
        lake, "rollouts", "select count(*), list(distinct run_id) from t"
    )
    assert (rollouts, run_ids) == (written, ["exp_001"])  # the run: the log folder's name
    rows = lake_query(
        lake,
        "rollout_tokens",
        "select iteration, source_line, token_ids, loss_mask, rollout_logprobs, "
        "trainer_logprobs, advantages, sample_loss_mask, sequence_tokens from t "
        "order by iteration, source_line",
    )
    assert len(rows) == written
    for step, line, ids, mask, engine, trainer, advantages, sample_mask, length in rows:
        source = run.lines(step)[line - 1]
        assert length == source["input_lengths"][0]
        assert ids == source["token_ids"][0][:length]  # the padding dropped
        assert mask == [m == 1 for m in source["token_loss_mask"][0][:length]]
        assert engine == source["generation_logprobs"][0][:length]
        assert trainer == source["prev_logprobs"][0][:length]
        assert advantages == source["advantages"][0][:length]
        assert sample_mask == source["sample_loss_mask"][0]
    # The arrays are no longer in the rollouts' extra; the scalars stay there.
    extras = [json.loads(e) for (e,) in lake_query(lake, "rollouts", "select extra from t")]
    assert all("token_ids" not in e and "prev_logprobs" not in e for e in extras)
    assert all("input_lengths" in e for e in extras)


def test_logprob_mismatch_equals_numpy(built: tuple[NemoRun, Path, Path]) -> None:
    run, _, warehouse = built
    expected = expected_mismatch(run, limit=2.0)
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        cursor = con.execute("select * from fct_logprob_mismatch order by step")
        names = [d[0] for d in cursor.description]
        rows = [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
    finally:
        con.close()
    assert [r["step"] for r in rows] == run.steps
    for row in rows:
        want = expected[row["step"]]
        assert row["run_id"] == "exp_001" and row["ratio_limit"] == 2.0
        for column, value in want.items():
            assert row[column] == pytest.approx(value, rel=1e-9, abs=1e-15), (row["step"], column)


def test_planted_mismatch_shows_at_its_step_only(built: tuple[NemoRun, Path, Path]) -> None:
    _, _, warehouse = built
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        rows = con.execute(
            "select step, share_ratio_outside, mean_abs_diff, k3_kl, mean_tis_weight "
            "from fct_logprob_mismatch order by step"
        ).fetchall()
    finally:
        con.close()
    for step, share, mean_abs, k3, tis in rows:
        if step in MISMATCH_AT:
            # about half the generated tokens were moved by 1.5 > ln 2
            assert share > 0.3 and mean_abs > 0.5 and k3 > 0.3
        else:
            # noise of 0.01: every ratio within [1/2, 2], the weight about 1
            assert share == 0 and mean_abs < 0.02 and k3 < 1e-3
            assert math.isclose(tis, 1.0, abs_tol=0.01)


def test_overlong_filtered_sample_is_not_compared(built: tuple[NemoRun, Path, Path]) -> None:
    """Step 2's last sample has sample_loss_mask 0: its tokens count nowhere."""
    run, _, warehouse = built
    lines = run.lines(2)
    dropped = [x for x in lines if x["sample_loss_mask"][0] == 0]
    assert len(dropped) == 1
    kept = sum(sum(x["token_loss_mask"][0]) for x in lines if x["sample_loss_mask"][0] != 0)
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        [(rollouts, tokens)] = con.execute(
            "select rollouts, tokens from fct_logprob_mismatch where step = 2"
        ).fetchall()
    finally:
        con.close()
    assert (rollouts, tokens) == (len(lines), kept)
