"""A run without token arrays: the mismatch its trainer logged, under canonical names.

The NeMo-RL run of tests/data/nemo_rl.py lands its token arrays, so
``fct_logprob_mismatch`` compares its logprobs. From the same arrays (d =
prev_logprobs - generation_logprobs over the trained tokens) three tracker
logs are written with the numbers each trainer would log for them, under its
own keys, and landed with ``obs ingest metrics``:

* verl's file logger, as verl b178a3cd56f58b2d502255daba591e92833930a7 writes
  the keys (verl/trainer/ppo/rollout_corr_helper.py: ``rollout_corr/kl``,
  ``k3_kl``, ``rollout_is_mean``, ``rollout_is_ratio_fraction_high``/``low``
  with token-level ``rollout_is``; verl/utils/debug/metrics.py:
  ``training/rollout_probs_diff_*``, of probabilities) and its DAPO recipe at
  246cac4ca6b0e3ce1009bc48aaa798689e0600af (recipe/dapo/dapo_ray_trainer.py:
  ``train/num_gen_batches``);
* NeMo-RL's keys, as 7ea279abfbeb698b092856d0dab61e7cf39bc909 computes them
  (nemo_rl/algorithms/loss/loss_functions.py: ``gen_kl_error`` with k3,
  ``token_mult_prob_error``; logged with the prefix ``train/``);
* prime-rl's metrics.jsonl, as 559b44772e471d1538537b8805cc77f3824a5e64 writes
  it (src/prime_rl/trainer/rl/train.py: ``mismatch_kl/all/mean``).

The canonical values must equal the mart's where the key measures the same
quantity, and the keys that measure another stay apart.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import duckdb
import numpy as np
import pytest

from tests.conftest import run_cli
from tests.data.nemo_rl import NemoRun, write_nemo_run

pytestmark = pytest.mark.integration

MISMATCH_AT = (3,)
LIMIT = 2.0  # verl's rollout_is_threshold, and the build's mismatch_ratio_limit
GEN_BATCHES = {1: 1, 2: 3, 3: 1, 4: 2}  # DAPO's generation batches per step

Built = tuple[NemoRun, duckdb.DuckDBPyConnection]

CANONICAL: dict[tuple[str, str], str | None] = {
    ("verl-run", "rollout_corr/k3_kl"): "mismatch_k3_kl",
    ("verl-run", "rollout_corr/kl"): "mismatch_k1_kl",
    ("verl-run", "rollout_corr/rollout_is_mean"): "mismatch_is_weight_mean",
    ("verl-run", "rollout_corr/rollout_is_ratio_fraction_high"): "mismatch_share_ratio_above",
    ("verl-run", "rollout_corr/rollout_is_ratio_fraction_low"): "mismatch_share_ratio_below",
    ("verl-run", "rollout_corr/chi2_token"): None,
    ("verl-run", "training/rollout_probs_diff_mean"): "rollout_prob_diff_mean",
    ("verl-run", "training/rollout_probs_diff_max"): "rollout_prob_diff_max",
    ("verl-run", "training/rollout_probs_diff_std"): "rollout_prob_diff_std",
    ("verl-run", "training/rollout_probs_diff_valid"): None,
    ("verl-run", "train/num_gen_batches"): "gen_batches",
    ("verl-run", "actor/pg_loss"): "loss",
    ("nemo-keys", "train/gen_kl_error"): "mismatch_k3_kl",
    ("nemo-keys", "train/token_mult_prob_error"): "mismatch_mult_prob_error",
    ("nemo-keys", "train/is_oob_ratio"): None,
    ("prime-run", "mismatch_kl/all/mean"): "mismatch_k3_kl",
    ("prime-run", "mismatch_kl/all/max"): None,
}


def _trained(run: NemoRun, step: int) -> tuple[np.ndarray, np.ndarray]:
    """The step's trained tokens' (trainer, rollout engine) logprobs."""
    trainer, engine = [], []
    for line in run.lines(step):
        length = line["input_lengths"][0]
        if line["sample_loss_mask"][0] == 0:
            continue
        mask = np.array(line["token_loss_mask"][0][:length], dtype=bool)
        trainer.append(np.array(line["prev_logprobs"][0][:length])[mask])
        engine.append(np.array(line["generation_logprobs"][0][:length])[mask])
    return np.concatenate(trainer), np.concatenate(engine)


def _logged(run: NemoRun, step: int) -> dict[str, dict[str, float]]:
    """Per run, what its trainer logs at the step (the formulas of the commits above)."""
    trainer, engine = _trained(run, step)
    d = trainer - engine
    k3 = float(np.mean(np.exp(d) - 1 - d))
    probs_diff = np.abs(np.exp(trainer) - np.exp(engine))
    return {
        "verl-run": {
            "rollout_corr/k3_kl": k3,
            "rollout_corr/kl": float(np.mean(engine - trainer)),
            "rollout_corr/rollout_is_mean": float(np.mean(np.exp(d))),
            "rollout_corr/rollout_is_ratio_fraction_high": float(np.mean(np.exp(d) > LIMIT)),
            "rollout_corr/rollout_is_ratio_fraction_low": float(np.mean(np.exp(d) < 1 / LIMIT)),
            "rollout_corr/chi2_token": float(np.mean(np.exp(d) ** 2) - 1),
            "training/rollout_probs_diff_valid": 1,
            "training/rollout_probs_diff_max": float(np.max(probs_diff)),
            "training/rollout_probs_diff_mean": float(np.mean(probs_diff)),
            "training/rollout_probs_diff_std": float(np.std(probs_diff, ddof=1)),
            "train/num_gen_batches": GEN_BATCHES[step],
            "actor/pg_loss": 0.1 / step,
        },
        "nemo-keys": {
            "train/gen_kl_error": k3,
            "train/token_mult_prob_error": float(np.mean(np.exp(np.abs(d)))),
            "train/is_oob_ratio": float(np.mean(np.exp(d) > LIMIT)),
        },
        "prime-run": {
            "mismatch_kl/all/mean": k3,
            "mismatch_kl/all/max": float(np.max(np.exp(d) - 1 - d)),
        },
    }


@pytest.fixture(scope="module")
def built(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Built]:
    root = tmp_path_factory.mktemp("mismatch-keys")
    run = write_nemo_run(root / "logs" / "exp_001", steps=4, mismatch_steps=MISMATCH_AT)
    tracker = root / "tracker"
    (tracker / "prime-run").mkdir(parents=True)
    logged = {step: _logged(run, step) for step in run.steps}
    lines = {
        tracker / "verl-run.jsonl": [
            {"step": step, "data": logged[step]["verl-run"]} for step in run.steps
        ],
        tracker / "nemo-keys.jsonl": [
            {"step": step, **logged[step]["nemo-keys"]} for step in run.steps
        ],
        tracker / "prime-run" / "metrics.jsonl": [
            {"step": step, **logged[step]["prime-run"]} for step in run.steps
        ],
    }
    for path, records in lines.items():
        path.write_text("".join(json.dumps(record) + "\n" for record in records))
    lake, warehouse = root / "lake", root / "warehouse" / "obs.duckdb"
    base = ["--lake", str(lake), "--warehouse", str(warehouse)]
    run_cli([*base, "ingest", "rollouts", str(run.log_dir)])
    run_cli([*base, "ingest", "metrics", str(tracker)])
    run_cli([*base, "build", "--select", "+fct_logprob_mismatch +fct_metric_summary"])
    con = duckdb.connect(str(warehouse), read_only=True)
    yield run, con
    con.close()


def _canonical(con: duckdb.DuckDBPyConnection, run_id: str, name: str) -> dict[int, float]:
    rows = con.execute(
        "select step, value from fct_metric_history "
        "where run_id = ? and canonical_metric = ? order by step",
        [run_id, name],
    ).fetchall()
    return dict(rows)


def _mart(con: duckdb.DuckDBPyConnection, column: str) -> dict[int, float]:
    rows = con.execute(
        f"select step, {column} from fct_logprob_mismatch where run_id = 'exp_001' order by step"
    ).fetchall()
    return dict(rows)


def test_mismatch_keys_get_their_canonical_names(built: Built) -> None:
    _, con = built
    rows = con.execute(
        "select distinct run_id, metric, canonical_metric from fct_metric_history "
        "where run_id != 'exp_001'"
    ).fetchall()
    assert {(run_id, metric): name for run_id, metric, name in rows} == CANONICAL


@pytest.mark.parametrize("run_id", ["verl-run", "nemo-keys", "prime-run"])
def test_k3_kl_of_each_trainer_equals_the_token_arrays(built: Built, run_id: str) -> None:
    run, con = built
    logged, mart = _canonical(con, run_id, "mismatch_k3_kl"), _mart(con, "k3_kl")
    assert list(logged) == run.steps
    assert logged == pytest.approx(mart, rel=1e-9, abs=1e-15)
    assert logged[3] > 0.3 > 1e-3 > max(logged[1], logged[2], logged[4])


def test_verl_ratio_keys_against_the_mart(built: Built) -> None:
    """k1 is minus mean_diff; the shares above and below add up to share_ratio_outside."""
    run, con = built
    k1 = _canonical(con, "verl-run", "mismatch_k1_kl")
    assert k1 == pytest.approx({s: -v for s, v in _mart(con, "mean_diff").items()}, rel=1e-9)
    above = _canonical(con, "verl-run", "mismatch_share_ratio_above")
    below = _canonical(con, "verl-run", "mismatch_share_ratio_below")
    outside = _mart(con, "share_ratio_outside")
    assert {s: above[s] + below[s] for s in run.steps} == pytest.approx(outside, abs=1e-12)
    assert above[3] > 0 and below[3] > 0


def test_verl_weight_mean_is_before_truncation(built: Built) -> None:
    """rollout_is_mean is no alias of mean_tis_weight: they part where ratios exceed c."""
    _, con = built
    weight = _canonical(con, "verl-run", "mismatch_is_weight_mean")
    tis = _mart(con, "mean_tis_weight")
    for step in (1, 2, 4):  # every ratio within [1/c, c]: truncation changes nothing
        assert weight[step] == pytest.approx(tis[step], rel=1e-9)
    assert weight[3] > tis[3] + 0.1


def test_verl_probability_diff_lands_as_logged(built: Built) -> None:
    run, con = built
    for suffix in ("mean", "max", "std"):
        logged = _canonical(con, "verl-run", f"rollout_prob_diff_{suffix}")
        key = f"training/rollout_probs_diff_{suffix}"
        want = {step: _logged(run, step)["verl-run"][key] for step in run.steps}
        assert logged == want
    # a difference of probabilities, not of logprobs: no alias of mean_abs_diff
    prob_mean = _canonical(con, "verl-run", "rollout_prob_diff_mean")
    assert prob_mean[3] != pytest.approx(_mart(con, "mean_abs_diff")[3], rel=0.05)


def test_metric_summary_names_the_dynamic_sampling(built: Built) -> None:
    _, con = built
    rows = con.execute(
        "select canonical_metric, data_points, first, last, max from fct_metric_summary "
        "where run_id = 'verl-run' and canonical_metric in ('gen_batches', 'mismatch_k3_kl') "
        "order by 1"
    ).fetchall()
    [(name, points, first, last, largest), k3] = rows
    assert (name, points, first, last, largest) == ("gen_batches", 4, 1.0, 2.0, 3.0)
    assert k3[0] == "mismatch_k3_kl" and k3[1] == 4 and k3[4] > 0.3
