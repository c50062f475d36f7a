"""A run's reward monitoring metrics as TensorBoard scalars, in the reward monitor's layout.

``export_tensorboard`` reads ``fct_reward_steps`` and
``fct_reward_function_steps`` (read-only) and writes one event file with
tensorboardX's ``SummaryWriter``, at the marts' ``step``:

* ``rewards/{mean,std,min,max,total,signal_to_noise,entropy,variance}``;
* ``rewards/functions/{fn}`` (mean), ``rewards/functions/{fn}_std`` and
  ``contributions/{fn}`` (contribution_pct);
* ``training/{kl_divergence,policy_entropy,advantage_mean,advantage_std}``;
* the custom-scalars layout (categories Reward Signals, Training Dynamics,
  Contributions).

The tag names are ``obs.monitor.format``'s, so the export, the
reward monitor's writer and the reader that lands its keys agree. A null in
a mart is not written (a step without KL has no ``training/kl_divergence``
point); NaN and Infinity are written as they are held.

The logdir is one TensorBoard run. Export files carry the suffix
``.obs-export``: a logdir that already holds an export is refused unless
``force`` (then the earlier export files are removed and one new file is
written); event files obs did not write are never removed, and a logdir
holding them is refused.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from obs.monitor.format import (
    ADVANTAGE_MEAN,
    ADVANTAGE_STD,
    KL_DIVERGENCE,
    POLICY_ENTROPY,
    REWARDS_ENTROPY,
    REWARDS_MAX,
    REWARDS_MEAN,
    REWARDS_MIN,
    REWARDS_SNR,
    REWARDS_STD,
    REWARDS_TOTAL,
    REWARDS_VARIANCE,
    contribution_key,
    function_key,
    function_std_key,
)
from obs.reports.errors import ReportError
from obs.reports.resolve import WITH_HISTORY, resolve_run
from obs.reports.sql import query_rows
from obs.reports.warehouse import open_runs, require_tables

MISSING_WRITER = "obs export tensorboard needs tensorboardX: pip install tensorboardX"
EVENT_PREFIX = "events.out.tfevents."
EXPORT_SUFFIX = ".obs-export"
STEP_MART = "fct_reward_steps"
FUNCTION_MART = "fct_reward_function_steps"

# fct_reward_steps column -> tag, in the order a step's points are written.
STEP_TAGS: dict[str, str] = {
    "mean": REWARDS_MEAN,
    "std": REWARDS_STD,
    "min": REWARDS_MIN,
    "max": REWARDS_MAX,
    "total": REWARDS_TOTAL,
    "signal_to_noise": REWARDS_SNR,
    "entropy": REWARDS_ENTROPY,
    "variance": REWARDS_VARIANCE,
    "kl_divergence": KL_DIVERGENCE,
    "policy_entropy": POLICY_ENTROPY,
    "advantage_mean": ADVANTAGE_MEAN,
    "advantage_std": ADVANTAGE_STD,
}
# fct_reward_function_steps column -> tag of a function.
FUNCTION_TAGS = {
    "mean": function_key,
    "std": function_std_key,
    "contribution_pct": contribution_key,
}

REWARD_SIGNALS = "Reward Signals"
TRAINING_DYNAMICS = "Training Dynamics"
CONTRIBUTIONS = "Contributions"
MULTILINE = "Multiline"


@dataclass
class TensorBoardExport:
    run_id: str
    logdir: Path
    path: Path  # the event file written
    scalars: int  # points written (the layout not counted)
    steps: int
    reward_functions: list[str]
    tags: dict[str, int] = field(default_factory=dict)  # tag -> points written
    replaced: list[Path] = field(default_factory=list)  # earlier export files removed


def layout(functions: list[str]) -> dict[str, dict[str, list[Any]]]:
    """The custom-scalars layout of the reward monitor, for tensorboardX's ``add_custom_scalars``.

    A Multiline chart's entries are regular expressions that TensorBoard matches
    at the start of a tag: a function's entry is its tag escaped and anchored at
    the end, so ``rewards/functions/fmt`` does not also draw ``..._std`` or a
    function ``fmt2``. The fixed tags match only themselves as they are.
    """

    def exact(tag: str) -> str:
        return re.escape(tag) + "$"

    return {
        REWARD_SIGNALS: {
            "Total Rewards": [MULTILINE, [REWARDS_MEAN, REWARDS_TOTAL, REWARDS_MAX]],
            "Per-Function Rewards": [MULTILINE, [exact(function_key(fn)) for fn in functions]],
            "Quality Metrics": [MULTILINE, [REWARDS_SNR, REWARDS_ENTROPY, REWARDS_VARIANCE]],
        },
        TRAINING_DYNAMICS: {
            "Policy Metrics": [MULTILINE, [KL_DIVERGENCE, POLICY_ENTROPY]],
            "Advantages": [MULTILINE, [ADVANTAGE_MEAN, ADVANTAGE_STD]],
        },
        CONTRIBUTIONS: {
            "Reward Contributions (%)": [
                MULTILINE,
                [exact(contribution_key(fn)) for fn in functions],
            ],
        },
    }


def export_tensorboard(
    warehouse: Path, run: str, logdir: Path, *, force: bool = False
) -> TensorBoardExport:
    """Write ``run``'s reward metrics into ``logdir`` as one new event file."""
    step_rows, function_rows, run_id = _read_marts(warehouse, run)
    writer_class = _summary_writer()
    replaced = _clear_logdir(logdir, force)
    functions = sorted({row["reward_function"] for row in function_rows})
    by_step: dict[int, list[tuple[str, float]]] = {}
    for row in step_rows:
        points = by_step.setdefault(row["step"], [])
        points += [(tag, row[col]) for col, tag in STEP_TAGS.items() if row[col] is not None]
    for row in function_rows:
        points = by_step.setdefault(row["step"], [])
        fn = row["reward_function"]
        points += [
            (key(fn), row[col]) for col, key in FUNCTION_TAGS.items() if row[col] is not None
        ]

    logdir.mkdir(parents=True, exist_ok=True)
    tags: dict[str, int] = {}
    writer = writer_class(logdir=str(logdir), filename_suffix=EXPORT_SUFFIX, flush_secs=10)
    try:
        # The layout first, at step 0: a reader that drops points when steps go
        # back (TensorBoard's EventAccumulator) keeps every scalar after it.
        writer.add_custom_scalars(layout(functions))
        for step in sorted(by_step):
            for tag, value in by_step[step]:
                writer.add_scalar(tag, float(value), global_step=step)
                tags[tag] = tags.get(tag, 0) + 1
    finally:
        writer.close()
    written = _export_files(logdir)
    return TensorBoardExport(
        run_id=run_id,
        logdir=logdir,
        path=written[-1],
        scalars=sum(tags.values()),
        steps=len(by_step),
        reward_functions=functions,
        tags=tags,
        replaced=replaced,
    )


def _summary_writer() -> Any:
    try:
        from tensorboardX import SummaryWriter
    except ImportError:
        raise ReportError(MISSING_WRITER) from None
    return SummaryWriter


def _read_marts(
    warehouse: Path, run: str
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], str]:
    con = open_runs(warehouse)
    try:
        run_id = resolve_run(
            con, warehouse, run, WITH_HISTORY, by_name="strict", required=False
        ).run_id
        require_tables(con, warehouse, STEP_MART, FUNCTION_MART)
        step_rows = query_rows(con, "tensorboard_steps", run=run_id)
        function_rows = query_rows(con, "tensorboard_function_steps", run=run_id)
    finally:
        con.close()
    if not step_rows and not function_rows:
        raise ReportError(
            f"{warehouse}: run '{run_id}' has no reward steps in {STEP_MART}; ingest its "
            "rollouts with per-function rewards or its reward monitor folder, then `obs build`"
        )
    return step_rows, function_rows, run_id


def _event_files(logdir: Path) -> list[Path]:
    """The logdir's own event files (subfolders are other TensorBoard runs), by name."""
    try:
        entries = sorted(os.scandir(logdir), key=lambda e: e.name)
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise ReportError(f"{logdir}: cannot list the logdir ({exc.strerror})") from exc
    return [Path(e.path) for e in entries if e.name.startswith(EVENT_PREFIX) and e.is_file()]


def _export_files(logdir: Path) -> list[Path]:
    return [p for p in _event_files(logdir) if p.name.endswith(EXPORT_SUFFIX)]


def _clear_logdir(logdir: Path, force: bool) -> list[Path]:
    """Refuse a logdir that holds event files; with ``force``, remove earlier exports only."""
    if logdir.exists() and not logdir.is_dir():
        raise ReportError(f"{logdir}: not a folder; give --logdir a folder (new or empty)")
    present = _event_files(logdir)
    foreign = [p for p in present if not p.name.endswith(EXPORT_SUFFIX)]
    if foreign:
        raise ReportError(
            f"{foreign[0]}: the logdir holds TensorBoard event files obs did not write "
            "(not even --force removes them); give another --logdir"
        )
    if present and not force:
        raise ReportError(
            f"{present[0]}: the logdir already holds an export; add --force to replace it, "
            "or give another --logdir"
        )
    for path in present:
        try:
            path.unlink()
        except OSError as exc:
            raise ReportError(f"{path}: cannot remove the earlier export ({exc.strerror})") from exc
    return present
