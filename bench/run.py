"""Benchmark: obs ingest and build against a pyarrow parse ceiling and a pandas script.

Generates a synthetic IFEval+GRPO run (default 200,000 rollouts, prompts of about
600 and responses of about 900 characters), then times in one run, each stage a
process of its own so that its peak memory is its own:

1. ceiling  a plain pyarrow JSON parse of the dumps (bench/ceiling.py);
2. ingest   ``obs ingest rollouts`` into a fresh lake;
3. build    ``obs build`` (every model and test) into a fresh warehouse;
4. pandas   the straightforward script of bench/pandas_baseline.py computing
            fct_prompt_iteration and fct_prompt_learning;
5. reward   ``obs ingest`` of an unscored GSM8K table (``--reward-rows``, default
            200,000) with ``--reward gsm8k``, beside the same ingest without it.

With ``--build-rows`` (default 1,000,000) it also lands that many rollouts and
times ``obs build`` on them. The page cache is warmed by the ceiling stage, so
every stage reads the dumps from memory alike. Results print as a table and go
to ``bench/out/results.json``.

    python bench/run.py [--rollouts 200000] [--build-rows 1000000]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import duckdb
from obs.ingest.synthetic import DemoSpec, write_demo_run

HERE = Path(__file__).resolve().parent
BIN = Path(sys.executable).parent
ITERATIONS = 10
SAMPLES = 8


@dataclass
class Stage:
    name: str
    seconds: float
    peak_rss_mb: float
    rows: int
    megabytes: float

    @property
    def mb_per_s(self) -> float:
        return self.megabytes / self.seconds

    @property
    def rows_per_s(self) -> float:
        return self.rows / self.seconds


def measure(name: str, command: list[str], rows: int, megabytes: float) -> Stage:
    """Run ``command`` as a child process; its wall time and its own peak RSS."""
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"bench: stage {name} failed: {' '.join(command)}")
    return Stage(name, seconds, usage.ru_maxrss / 1024, rows, megabytes)


def generate(folder: Path, rollouts: int, seed: int) -> tuple[int, float]:
    prompts = max(1, rollouts // (ITERATIONS * SAMPLES))
    spec = DemoSpec(
        prompts=prompts,
        iterations=ITERATIONS,
        samples_per_prompt=SAMPLES,
        seed=seed,
        prompt_chars=600,
        response_chars=900,
    )
    shutil.rmtree(folder, ignore_errors=True)
    made = write_demo_run(folder, spec)
    megabytes = sum(f.stat().st_size for f in made.files) / 1e6
    return made.rollouts, megabytes


def generate_gsm8k(path: Path, rows: int, seed: int) -> float:
    """An unscored GSM8K rollout table: answers in every form the extractor reads.

    A copy with a ``reward`` column already filled goes beside it
    (``scored.parquet``), for the same ingest without a reward function.
    """
    import random

    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = random.Random(seed)
    forms = [
        "Adding them up gives {n}.\n#### {n}",
        "So the total is \\boxed{{{n}}}.",
        "She pays ${c} in all. The answer is ${c}.",
        "First 12 + 30 = 42, then 42 * 2 = 84, so {n}",
    ]
    prompts, responses, answers, data_idx, sample_idx = [], [], [], [], []
    for row in range(rows):
        problem = row // 8
        truth = 100 + problem % 9000
        given = truth if rng.random() < 0.6 else truth + rng.randint(1, 9)
        prompts.append(f"Problem {problem}: how many apples are left after ... ?")
        text = rng.choice(forms).format(n=given, c=f"{given:,}")
        responses.append("Let me think step by step. " * 20 + text)
        answers.append(f"Step by step reasoning.\n#### {truth}")
        data_idx.append(problem)
        sample_idx.append(row % 8)
    table = pa.table(
        {
            "data_idx": data_idx,
            "sample_idx": sample_idx,
            "prompt": prompts,
            "response": responses,
            "original_answer": answers,
        }
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path)
    scored = table.append_column("reward", pa.array([0.0] * rows))
    pq.write_table(scored, path.with_name("scored.parquet"))
    return path.stat().st_size / 1e6


def obs(lake: Path, warehouse: Path, *args: str) -> list[str]:
    return [str(BIN / "obs"), "--lake", str(lake), "--warehouse", str(warehouse), *args]


def agreement(warehouse: Path, pandas_out: Path) -> float:
    """Largest |mean_score| difference between obs and pandas over every prompt-iteration."""
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        row = con.execute(
            f"""
            select max(abs(obs.mean_score - pandas.mean_score)), count(*)
            from fct_prompt_iteration as obs
            inner join read_parquet('{pandas_out / "prompt_iteration.parquet"}') as pandas
                on obs.iteration = pandas.iteration and obs.prompt_hash = pandas.prompt_hash
            """
        ).fetchone()
    finally:
        con.close()
    assert row is not None
    return float(row[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rollouts", type=int, default=200_000)
    parser.add_argument("--build-rows", type=int, default=1_000_000, help="0 to skip")
    parser.add_argument("--reward-rows", type=int, default=200_000, help="0 to skip")
    parser.add_argument("--out", type=Path, default=HERE / "out")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)

    dumps = out / "dumps"
    print(f"generating {args.rollouts} rollouts ...", file=sys.stderr)
    rollouts, megabytes = generate(dumps, args.rollouts, args.seed)
    lake, warehouse = out / "lake", out / "warehouse" / "obs.duckdb"
    for stale in (lake, warehouse.parent, out / "pandas"):
        shutil.rmtree(stale, ignore_errors=True)

    python = str(BIN / "python")
    stages = [
        measure("ceiling", [python, str(HERE / "ceiling.py"), str(dumps)], rollouts, megabytes),
        measure(
            "ingest",
            obs(lake, warehouse, "ingest", "rollouts", str(dumps), "--run", "bench", "-q"),
            rollouts,
            megabytes,
        ),
        measure("build", obs(lake, warehouse, "build"), rollouts, megabytes),
        measure(
            "pandas",
            [python, str(HERE / "pandas_baseline.py"), str(dumps), str(out / "pandas")],
            rollouts,
            megabytes,
        ),
    ]
    by_name = {s.name: s for s in stages}
    max_diff = agreement(warehouse, out / "pandas")

    large: Stage | None = None
    if args.build_rows:
        print(f"generating {args.build_rows} rollouts for the build test ...", file=sys.stderr)
        big_dumps, big_lake = out / "dumps_large", out / "lake_large"
        big_warehouse = out / "warehouse_large" / "obs.duckdb"
        for stale in (big_lake, big_warehouse.parent):
            shutil.rmtree(stale, ignore_errors=True)
        big_rows, big_mb = generate(big_dumps, args.build_rows, args.seed + 1)
        measure(
            "ingest-large",
            obs(big_lake, big_warehouse, "ingest", "rollouts", str(big_dumps), "-q"),
            big_rows,
            big_mb,
        )
        large = measure("build-large", obs(big_lake, big_warehouse, "build"), big_rows, big_mb)
        shutil.rmtree(big_dumps, ignore_errors=True)

    rewarded: list[Stage] = []
    if args.reward_rows:
        print(f"generating a {args.reward_rows}-row GSM8K table ...", file=sys.stderr)
        table = out / "gsm8k" / "rollouts.parquet"
        table_mb = generate_gsm8k(table, args.reward_rows, args.seed)
        variants = (
            ("table-plain", table.with_name("scored.parquet"), []),
            ("table-gsm8k", table, ["--reward", "gsm8k"]),
        )
        for name, source, extra in variants:
            reward_lake = out / f"lake_{name}"
            shutil.rmtree(reward_lake, ignore_errors=True)
            command = obs(reward_lake, warehouse, "ingest", "rollouts", str(source))
            rewarded.append(
                measure(
                    name,
                    [*command, "--run", "gsm8k", "--iteration", "0", "-q", *extra],
                    args.reward_rows,
                    table_mb,
                )
            )
            shutil.rmtree(reward_lake, ignore_errors=True)

    obs_seconds = by_name["ingest"].seconds + by_name["build"].seconds
    obs_peak = max(by_name["ingest"].peak_rss_mb, by_name["build"].peak_rss_mb)
    ratios = {
        "ingest_vs_ceiling_throughput": by_name["ceiling"].seconds / by_name["ingest"].seconds,
        "pandas_vs_obs_time": by_name["pandas"].seconds / obs_seconds,
        "obs_vs_pandas_peak_memory": obs_peak / by_name["pandas"].peak_rss_mb,
    }
    print(f"\n{rollouts} rollouts, {megabytes:.0f} MB of JSONL, {os.cpu_count()} cores")
    print(f"{'stage':<12} {'seconds':>8} {'MB/s':>8} {'rows/s':>10} {'peak MB':>9}")
    for stage in [*stages, *([large] if large else []), *rewarded]:
        print(
            f"{stage.name:<12} {stage.seconds:>8.2f} {stage.mb_per_s:>8.1f} "
            f"{stage.rows_per_s:>10.0f} {stage.peak_rss_mb:>9.0f}"
        )
    print(
        f"\ningest / ceiling throughput  {ratios['ingest_vs_ceiling_throughput']:.2f}"
        "  (goal >= 0.69)"
    )
    print(f"pandas time / obs ingest+build {ratios['pandas_vs_obs_time']:.2f}x  (goal >= 5x)")
    print(
        f"obs peak / pandas peak memory  {ratios['obs_vs_pandas_peak_memory']:.2f}  (goal <= 0.33)"
    )
    if large:
        print(f"obs build on {large.rows} rollouts   {large.seconds:.1f} s  (goal < 30 s)")
    if rewarded:
        print(
            f"gsm8k reward at ingest         {rewarded[1].rows_per_s:,.0f} rows/s "
            f"(ingest without a reward: {rewarded[0].rows_per_s:,.0f} rows/s)"
        )
    print(f"max |mean_score| obs vs pandas {max_diff:.2e}")
    results = {
        "rollouts": rollouts,
        "megabytes": megabytes,
        "stages": [asdict(s) | {"mb_per_s": s.mb_per_s} for s in stages],
        "build_large": asdict(large) if large else None,
        "reward": [asdict(s) | {"rows_per_s": s.rows_per_s} for s in rewarded],
        "ratios": ratios,
        "max_mean_score_diff": max_diff,
    }
    (out / "results.json").write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
