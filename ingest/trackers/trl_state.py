"""TRL (and any Hugging Face Trainer) ``trainer_state.json``: ``log_history`` as points.

The Trainer rewrites the whole file at every save and keeps a copy in each
``checkpoint-N/`` folder, each a prefix of the next. All of them are one run:
the run id is the output folder's name (the folder above ``checkpoint-N``;
its path below the folder given when there are several), read in checkpoint
order with the output folder's own file last,
and the landing keeps one value per (step, key), so reading every copy lands
each step once.

``log_history`` mixes train rows (``loss``, ``reward``, ``kl``, ...), eval rows
(``eval_*``) at the same steps, and a last row with the run totals
(``train_runtime``, ``train_loss``, ...). Train and eval rows land as points
under their own keys, as logged (old and new TRL key names alike: the
``metric_aliases`` seed maps them). The totals row goes to the run's summary.
There is no wall time in the file.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from obs.ingest.errors import IngestError
from obs.ingest.readers import TooDeep, loads
from obs.ingest.trackers.base import RunHistory, as_step, relative_name, safe_run_id

FORMATS = {"trl": "TRL / Hugging Face Trainer trainer_state.json (log_history)"}
NAME = "trainer_state.json"
CHECKPOINT = re.compile(r"^checkpoint-\d+$")
# The Trainer's last log row: the run's totals, not a step's values.
TOTALS = frozenset(
    {"train_runtime", "train_samples_per_second", "train_steps_per_second", "total_flos"}
)
CONFIG_KEYS = (
    "max_steps",
    "num_train_epochs",
    "train_batch_size",
    "logging_steps",
    "eval_steps",
    "save_steps",
)


def find(path: Path) -> list[tuple[str, Path]]:
    if path.is_file():
        return [("trl", path)] if path.name == NAME or _is_state(path) else []
    found = [p for p in path.rglob(NAME) if p.is_file()]
    return [("trl", p) for p in sorted(found, key=_order)]


def _is_state(path: Path) -> bool:
    if path.suffix != ".json":
        return False
    try:
        with path.open("rb") as handle:
            head = handle.read(4096)
    except OSError:
        return False
    return b'"log_history"' in head or b'"global_step"' in head


def stat_files(fmt: str, origin: Path) -> list[Path]:
    return [origin]


def output_folder(origin: Path) -> Path:
    """The trainer's output folder (the folder above ``checkpoint-N``)."""
    folder = origin.resolve().parent
    return folder.parent if CHECKPOINT.match(folder.name) else folder


def _order(origin: Path) -> tuple[str, int]:
    """Copies in checkpoint order, the output folder's own file last."""
    folder = origin.resolve().parent
    match = CHECKPOINT.match(folder.name)
    return (str(output_folder(origin)), int(folder.name.split("-")[1]) if match else 2**63)


def read(fmt: str, origin: Path, root: Path) -> list[RunHistory]:
    try:
        state = loads(origin.read_bytes())
    except (OSError, UnicodeDecodeError) as exc:
        raise IngestError(f"{origin}: cannot be read ({exc})") from exc
    except TooDeep as exc:
        raise IngestError(f"{origin}: {exc}") from exc
    except json.JSONDecodeError as exc:
        raise IngestError(
            f"{origin}: is not complete JSON ({exc.msg} at line {exc.lineno}); if the trainer "
            "is saving it, ingest again once it is written"
        ) from exc
    if not isinstance(state, dict) or not isinstance(state.get("log_history"), list):
        raise IngestError(f"{origin}: has no log_history list; is it a trainer_state.json?")
    name = relative_name(output_folder(origin), root)
    history = RunHistory(run_id=safe_run_id(name), source="trl", origin=origin, name=name)
    history.config = {k: state[k] for k in CONFIG_KEYS if k in state}
    for number, row in enumerate(state["log_history"], start=1):
        _row(history, origin, number, row)
    for key in ("best_metric", "best_model_checkpoint", "global_step", "epoch"):
        if state.get(key) is not None:
            history.summary[key] = state[key]
    history.state = _state(state)
    return [history]


def _row(history: RunHistory, origin: Path, number: int, row: Any) -> None:
    if not isinstance(row, dict):
        history.reject(origin, number, "log_history entry is not an object", json.dumps(row))
        return
    step = as_step(row.get("step"))
    if step is None:
        history.reject(
            origin,
            number,
            f"log_history entry has no integer step (step={row.get('step')!r})",
            json.dumps(row, allow_nan=True),
        )
        return
    if TOTALS & row.keys():
        history.summary.update({k: v for k, v in row.items() if k != "step"})
        return
    for key, value in row.items():
        if key != "step":
            history.add(step, key, value)


def _state(state: dict[str, Any]) -> str:
    """finished once global_step reached max_steps; else running (or stopped early)."""
    step, most = state.get("global_step"), state.get("max_steps")
    if isinstance(step, int) and isinstance(most, int) and most > 0 and step >= most:
        return "finished"
    return "running"
