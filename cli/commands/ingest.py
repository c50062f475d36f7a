"""``obs ingest``: land a source's files in the lake."""

from __future__ import annotations

import json
import math
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import click
from obs.cli.errors import friendly_errors
from obs.cli.options import (
    Settings,
    echo,
    echo_err,
    pass_settings,
    quiet_option,
    run_id_callback,
)
from obs.ingest.errors import IngestError
from obs.ingest.writer import FileResult, IngestResult

F = TypeVar("F", bound=Callable[..., Any])


@click.group()
def ingest() -> None:
    """Land logs a run already writes as parquet in the lake.

    \b
    Example:
      obs ingest rollouts runs/grpo-ifeval/rollout_data --run grpo-ifeval
      obs ingest metrics runs/grpo-ifeval/wandb --run grpo-ifeval
      obs ingest monitoring runs/grpo-ifeval/monitoring_data --run grpo-ifeval
      obs ingest eval-logs outputs/grpo_masked/eval_logs --run agent-1
      obs ingest trainer-log outputs/grpo_masked/train.log --run agent-1
    """


def _path_and_iterations(
    words: tuple[str, ...], iterations: tuple[int, ...]
) -> tuple[Path, tuple[int, ...]]:
    """Split ``PATH --iterations 0 1 2``: click hands over 1 and 2 as positionals."""
    numbers = [w for w in words if w.isdigit()]
    paths = [w for w in words if not w.isdigit()]
    if numbers and not iterations:
        raise click.UsageError(f"unexpected extra argument {numbers[0]!r}")
    if len(paths) != 1:
        raise click.UsageError(
            "give exactly one PATH (a dump folder or a rollout table)"
            if not paths
            else f"got {len(paths)} paths ({', '.join(paths)}); give one"
        )
    return Path(paths[0]), (*iterations, *(int(n) for n in numbers))


@contextmanager
def _file_progress(label: str, quiet: bool) -> Iterator[object]:
    """A spinner-free progress line per file on stderr (terminals only, not --quiet)."""
    if quiet or not sys.stderr.isatty():
        yield None
        return
    done = 0

    def tick(result: FileResult) -> None:
        nonlocal done
        done += 1
        echo_err(f"\r{label}: {done} files, last {result.source.name}   ", nl=False)

    yield tick
    echo_err("")


def _reward_weights(value: str | None) -> dict[str, float] | None:
    """``--reward-weights f=w,g=v`` as a dict; one line naming the part that is wrong."""
    if value is None:
        return None
    weights: dict[str, float] = {}
    for part in value.split(","):
        name, sep, number = part.strip().rpartition("=")
        try:
            weight = float(number)
        except ValueError:
            weight = math.nan
        if not sep or not name.strip() or not math.isfinite(weight):
            raise click.BadParameter(
                f"{part.strip()!r} is not FUNCTION=WEIGHT (e.g. format_reward=1,check_answer=0)",
                param_hint="--reward-weights",
            )
        weights[name.strip()] = weight
    return weights


@ingest.command()
@click.argument("words", nargs=-1, required=True, metavar="PATH")
@click.option(
    "--run",
    "run_id",
    callback=run_id_callback,
    help="Run id: 1-128 letters, digits and . _ - + @ : (default: the folder's or file's name).",
)
@click.option(
    "--iterations",
    type=int,
    multiple=True,
    help="Only these dump files of a folder (repeat the option, or list them: --iterations 0 1 2).",
)
@click.option("--iteration", type=int, help="Iteration of a rollout table that carries none.")
@click.option(
    "--strict",
    is_flag=True,
    help="All or nothing: land nothing and exit 1 when any row is rejected or any file "
    "is damaged, rewritten or refused.",
)
@click.option(
    "--reward",
    help="Score every row at ingest: gsm8k (built in) or package.module:function "
    "(called with the row as a dict, returns a float).",
)
@click.option(
    "--tokenizer",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="A local tokenizer.json: adds response_tokens (in extra).",
)
@click.option(
    "--reward-weights",
    "reward_weights",
    callback=lambda ctx, param, value: _reward_weights(value),
    metavar="F=W,...",
    help="Each reward function's weight in the reward the trainer optimised "
    "(format_reward=1,check_answer=0): kept on the rollouts for the reward marts, and a "
    "TRL completion's score is the weighted sum (default: weights from the run's config, "
    "else fitted from its logged total, else 1).",
)
@click.option(
    "--gzip-max-ratio",
    "gzip_max_ratio",
    type=click.FloatRange(min=1),
    default=50,
    show_default=True,
    envvar="OBS_GZIP_MAX_RATIO",
    help="A .gz file may expand to this many times its size past its first 64 MiB; one that "
    "would expand further (a gzip bomb) lands its lines up to there (env OBS_GZIP_MAX_RATIO).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON on stdout.")
@quiet_option
@pass_settings
def rollouts(
    settings: Settings,
    words: tuple[str, ...],
    run_id: str | None,
    iterations: tuple[int, ...],
    iteration: int | None,
    strict: bool,
    reward: str | None,
    tokenizer: Path | None,
    reward_weights: dict[str, float] | None,
    gzip_max_ratio: float,
    as_json: bool,
    quiet: bool,
) -> None:
    """Land rollouts: dumps (verl, IFEval+GRPO, NeMo-RL, TRL completions), prime-rl runs, tables.

    Unknown fields land in `extra`; bad rows go to the lake's `_rejects` table
    with file, line and reason while the good ones land. Ingesting the same file
    twice adds nothing; a dump that grew lands only its new complete lines;
    validation files (val_N.jsonl, val_data_stepN.jsonl) land in the run RUN:val.
    A prime-rl run folder lands its rollouts/step_N/{train,eval}/all/traces.jsonl
    (one rollout per trace of the policy; eval into RUN:val). A rollout's
    trainer group (verl's uid, prime-rl's group.id) lands in `group_id`.
    NeMo-RL's train_data_stepN.jsonl also lands each sample's token arrays
    (ids, loss mask, rollout and trainer logprobs, advantages) in
    `rollout_tokens`, one row per rollout.

    \b
    Example:
      obs ingest rollouts outputs/rollout_data --run grpo-ifeval
      obs ingest rollouts outputs/rollout_data --iterations 0 1 2
      obs ingest rollouts outputs/my-prime-run          # rollouts/step_N/.../traces.jsonl
      obs ingest rollouts outputs/validation_data --run grpo-ifeval:val  # verl V1
      obs ingest rollouts trainer_output/completions --run trl-gsm8k
      obs ingest rollouts rollouts.parquet --run gsm8k-base --iteration 0
      obs ingest rollouts unscored.parquet --iteration 0 --reward gsm8k
      obs ingest rollouts out/completions --run trl-math --reward-weights fmt=1,check=0
    """
    from obs.ingest.readers import GzipLimit
    from obs.ingest.rollout_plan import default_run_id
    from obs.ingest.rollouts import ingest_rollouts

    path, iterations = _path_and_iterations(words, iterations)
    if run_id is None:
        try:
            run_id = default_run_id(path)
        except IngestError as exc:
            raise click.UsageError(str(exc)) from exc
    with friendly_errors(settings.debug), _file_progress(f"ingesting {run_id}", quiet) as tick:
        result = ingest_rollouts(
            path,
            lake=settings.lake,
            run_id=run_id,
            iterations=iterations or None,
            iteration=iteration,
            reward=reward,
            tokenizer=tokenizer,
            strict=strict,
            on_file=tick,  # type: ignore[arg-type]
            reward_weights=reward_weights,
            gzip_limit=GzipLimit(ratio=gzip_max_ratio),
        )
    unchanged = sum(1 for f in result.files if f.status == "unchanged")
    others = result.files_skipped - unchanged
    skipped = f"{unchanged} already ingested" + (f", {others} skipped" if others else "")
    _report(
        result,
        settings,
        as_json=as_json,
        quiet=quiet,
        label=f"run {result.run_id}",
        landed=_plural(result.rows_landed, "row")
        + (f" and {_plural(result.companion_rows, 'token row')}" if result.companion_rows else ""),
        read_from=f"{_plural(len(result.files), 'file')} ({skipped})",
        unit="row",
    )
    rejects = settings.lake / "_rejects"
    if result.strict_failed:
        problems = sum(1 for f in result.files if f.is_problem)
        raise click.ClickException(
            f"{path}: {_plural(result.rows_rejected, 'row')} rejected and "
            f"{_plural(problems, 'file')} with problems (--strict): nothing landed; "
            f"fix them (rejects are listed above) or ingest without --strict"
        )
    retry = next((f for f in result.files if f.status == "retry"), None)
    if result.rows_landed == 0 and retry is not None:
        raise click.ClickException(f"{retry.source}: {retry.note}")
    unreadable = [f for f in result.files if f.status == "unreadable"]
    read_something = any(f.status == "unchanged" or f.rows_landed for f in result.files)
    if unreadable and not read_something and not result.rows_rejected:
        first = unreadable[0]
        more = f" (and {_plural(len(unreadable) - 1, 'other file')})" if len(unreadable) > 1 else ""
        raise click.ClickException(f"{first.source}: {first.note}{more}")
    if result.rows_landed == 0 and result.rows_rejected > 0:
        raise click.ClickException(
            f"{path}: no row could be read ({_plural(result.rows_rejected, 'row')} rejected); "
            f"see {rejects}"
        )


def _plural(count: int, noun: str) -> str:
    if count == 1:
        return f"{count:,} {noun}"
    return f"{count:,} " + (noun[:-1] + "ies" if noun.endswith("ry") else noun + "s")


def _report(
    result: IngestResult,
    settings: Settings,
    *,
    as_json: bool,
    quiet: bool,
    label: str,
    landed: str,
    read_from: str,
    unit: str,
    list_each: Callable[[FileResult], list[str]] | None = None,
) -> None:
    """What an ingest landed, the same way for every ingest command.

    ``--json``: one JSON object on stdout. Else each file's or source's note
    on stderr (``warning:`` for a problem, ``note:`` for news), the summary
    line on stdout (``{label}: {landed} landed, N rejected, from
    {read_from} -> LAKE``), then the rejects: each one (``list_each``, when
    they are few and each names its file) or the commonest reasons.

    ``--quiet``: no summary and no news; what went wrong still prints on
    stderr (each problem file's warning and the rejects), so a quiet ingest
    that prints nothing landed everything it read.
    """
    if as_json:
        click.echo(json.dumps(_payload(result, settings)))
        sys.stdout.flush()
        return
    unreadable = [f for f in result.files if f.status == "unreadable"]
    # (a lone source that could not be read is the command's error line)
    only_unreadable = len(unreadable) == 1 and len(result.files) == 1
    if not only_unreadable:
        for file in result.files:
            if file.note and (file.status != "unchanged" or "as far as" in file.note):
                if quiet and not file.is_problem:
                    continue
                kind = "warning" if file.is_problem else "note"
                echo_err(f"{kind}: {file.source}: {file.note}")
    if quiet and not result.rows_landed and not result.strict_failed:
        sys.stdout.flush()
        return  # nothing landed: the command's error line says why, alone
    if not quiet:
        echo(
            (f"{label}: " if label else "")
            + f"{landed} landed, {result.rows_rejected:,} rejected, from {read_from} "
            f"-> {settings.lake}"
        )
    elif result.rows_rejected:
        echo_err(
            (f"{label}: " if label else "") + f"{result.rows_rejected:,} rejected, from {read_from}"
        )
    if list_each is not None:
        for file in result.files:
            for line in list_each(file)[:20]:
                echo_err(f"  rejected: {line}")
    else:
        reasons = _reasons(result)
        for reason, count in reasons.most_common(5):
            echo_err(f"  rejected {count}: {reason}")
        if reasons and not result.strict_failed:
            echo_err(
                f"  every rejected {unit}, with its file and line: {settings.lake / '_rejects'}"
            )
    sys.stdout.flush()


def _reasons(result: IngestResult) -> Counter[str]:
    return Counter(reason.split(":")[0] for f in result.files for reason in f.reject_reasons)


def _payload(result: IngestResult, settings: Settings) -> dict[str, object]:
    """The --json output of every ingest command."""
    return {
        "run_id": result.run_id,
        "run_ids": result.runs,
        "lake": str(settings.lake),
        "files": len(result.files),
        "files_skipped": result.files_skipped,
        "sources": result.sources,
        "rows_landed": result.rows_landed,
        "points_landed": result.points_landed,
        "samples_landed": result.samples_landed,
        "records_landed": dict(result.records_landed),
        "token_rows_landed": result.companion_rows,
        "rows_rejected": result.rows_rejected,
        "strict_failed": result.strict_failed,
        "reject_reasons": dict(_reasons(result)),
        "skipped": dict(result.skipped),
        "file_results": [
            {
                "path": str(f.source),
                "run_id": f.run_id,
                "status": f.status,
                "rows_landed": f.rows_landed,
                "rows_rejected": f.rows_rejected,
                "note": f.note,
            }
            for f in result.files
        ],
    }


@ingest.command()
@click.argument("path", type=click.Path(path_type=Path))
@click.option(
    "--run",
    "run_id",
    callback=run_id_callback,
    help="Land every run found under PATH as this one run (default: the id each source "
    "gives: the W&B run id, the TensorBoard run folder, the MLflow run id, <project>.<run "
    "name> for Trackio, the TRL output folder, the JSONL file's name, the reward monitor's "
    "folder).",
)
@click.option(
    "--format",
    "fmt",
    default="auto",
    show_default=True,
    help="Read only this kind of source: auto, wandb, wandb-export, wandb-csv, tensorboard, "
    "trl, mlflow, trackio, jsonl, reward-monitor, eval-logs, trainer-log.",
)
@click.option(
    "--strict",
    is_flag=True,
    help="All or nothing: land nothing and exit 1 when any record is rejected or any source "
    "cannot be read.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON on stdout.")
@quiet_option
@pass_settings
def metrics(
    settings: Settings,
    path: Path,
    run_id: str | None,
    fmt: str,
    strict: bool,
    as_json: bool,
    quiet: bool,
) -> None:
    """Land run histories: W&B, TensorBoard, TRL, MLflow, Trackio, JSON-lines logs, reward monitors.

    PATH is a file or a folder; a folder may hold many runs of many trackers.
    Lands every scalar as (run, step, key, value, wall time) in the lake's
    `metrics` table (NaN and Infinity kept) and each run's name, state, tags,
    config and summary in `runs`; a reward monitor's per-sample rewards land
    in `reward_samples`. A Trackio folder (or one <project>.db) is opened
    read-only, so a run still writing is not disturbed; its alerts land in
    the run's summary. Media, tables and histograms are not metrics: the
    summary line counts what was skipped. Ingesting again lands only the
    steps the run does not hold yet.

    \b
    Example:
      obs ingest metrics wandb/                       # offline or synced W&B runs
      obs ingest metrics analysis_run.json            # a W&B export
      obs ingest metrics runs/ --format tensorboard   # a folder of TensorBoard runs
      obs ingest metrics trl-out/ --run trl-gsm8k     # trainer_state.json files
      obs ingest metrics mlruns/                      # an MLflow file store
      obs ingest metrics ~/.cache/huggingface/trackio # Trackio projects
      obs ingest metrics outputs/metrics.jsonl --run verl-gsm8k
      obs ingest metrics outputs/my-prime-run         # prime-rl's metrics.jsonl
      obs ingest metrics monitoring_data/ --run grpo-1  # a GRPO reward monitor's folder
    """
    from obs.ingest.keyed import formats

    if fmt != "auto" and fmt not in formats():
        raise click.BadParameter(
            f"{fmt!r} is not one of auto, {', '.join(formats())}", param_hint="--format"
        )
    _land_histories(settings, path, run_id, fmt, strict, as_json, quiet)


def _source_options(run_default: str, strict_what: str) -> Callable[[F], F]:
    """--run, --strict, --json and --quiet of the commands that land one kind of source."""

    def decorate(command: F) -> F:
        for option in reversed(
            [
                click.option(
                    "--run",
                    "run_id",
                    callback=run_id_callback,
                    help=f"Run id: 1-128 letters, digits and . _ - + @ : (default: {run_default}).",
                ),
                click.option(
                    "--strict",
                    is_flag=True,
                    help=f"All or nothing: land nothing and exit 1 when any {strict_what}.",
                ),
                click.option(
                    "--json", "as_json", is_flag=True, help="Print the result as JSON on stdout."
                ),
                quiet_option,
                pass_settings,
            ]
        ):
            command = option(command)  # type: ignore[operator]
        return command

    return decorate


@ingest.command()
@click.argument("path", metavar="DIR", type=click.Path(path_type=Path))
@_source_options(
    "the folder's name; its path below DIR, joined with '.', for folders found under DIR",
    "file or sample is rejected",
)
def monitoring(
    settings: Settings,
    path: Path,
    run_id: str | None,
    strict: bool,
    as_json: bool,
    quiet: bool,
) -> None:
    """Land a GRPO reward monitor's folder (obs.monitor.RewardTracker's files).

    DIR is the monitor's folder (monitoring_data/), or a folder holding such
    folders. Each step_NNNNNN.json's metrics land in `metrics` (W&B-style keys:
    rewards/mean, rewards/functions/{fn}, contributions/{fn}, training/...;
    the dataclass names such as mean_reward are mapped onto them), its
    reward_scores in `reward_samples` (one row per step, function and
    sample); final_metrics.json and summary.json give the run's config and
    summary. A bad file goes to `_rejects` with its name and reason while the
    rest lands; ingesting again lands only new or changed steps. The same as
    `obs ingest metrics DIR --format reward-monitor`.

    \b
    Example:
      obs ingest monitoring monitoring_data --run grpo-qwen-1
      obs ingest monitoring outputs/ --json     # every monitor folder under outputs/
    """
    from obs.ingest.trackers import reward_monitor

    if path.exists() and not reward_monitor.find(path):
        raise click.ClickException(
            f"{path}: holds no reward monitor files (step_NNNNNN.json, final_metrics.json); "
            "point at the folder RewardTracker writes (monitoring_data/ by default)"
        )
    _land_histories(settings, path, run_id, "reward-monitor", strict, as_json, quiet)


RECORD_NOUNS = {
    "eval_steps": "eval step",
    "step_groups": "step summary",
    "turn_advantages": "advantage table",
}


def _records_landed(result: IngestResult) -> str:
    """``12 eval steps, 40 advantage tables`` (blocks landed per record table)."""
    counts = result.records_landed
    landed = [_plural(counts[t], noun) for t, noun in RECORD_NOUNS.items() if counts.get(t)]
    return ", ".join(landed) or "0 records"


@ingest.command("eval-logs")
@click.argument("path", metavar="DIR", type=click.Path(path_type=Path))
@_source_options(
    "the folder's name, or its parent's for a folder called eval_logs", "file is rejected"
)
def eval_logs(
    settings: Settings,
    path: Path,
    run_id: str | None,
    strict: bool,
    as_json: bool,
    quiet: bool,
) -> None:
    """Land an agent trainer's eval logs (eval_logs/eval_step_XXXX.json).

    DIR is the eval_logs folder (or a folder holding such folders). Each
    file is one eval: its statistics (accuracy, correct_answers,
    total_samples, attempted_answer, found_correct_email, searches, turns,
    num_idk, rewards, eval_time, beat_rate; other spellings such as
    ever_found_right_email are mapped) land in the lake's `eval_steps`, and
    every other key in its `extra` JSON, so another agent's rubric can be
    queried too. A baseline_eval_*.json lands as step -1. A damaged file is
    named and skipped while the others land; ingesting again lands only new
    or rewritten files. fct_eval_steps holds the result after `obs build`.

    \b
    Example:
      obs ingest eval-logs outputs/grpo_masked/eval_logs --run agent-1
      obs ingest eval-logs outputs/ --json      # every eval_logs folder under outputs/
    """
    from obs.ingest.trackers import eval_logs as reader

    if path.exists() and not reader.find(path):
        raise click.ClickException(
            f"{path}: holds no eval logs (eval_step_XXXX.json); point at the trainer's "
            "eval_logs/ folder"
        )
    _land_histories(settings, path, run_id, reader.FORMAT, strict, as_json, quiet)


@ingest.command("trainer-log")
@click.argument("path", metavar="FILE", type=click.Path(path_type=Path))
@_source_options(
    "the file's name, or its folder's for a generic name such as train.log",
    "block cannot be parsed",
)
def trainer_log(
    settings: Settings,
    path: Path,
    run_id: str | None,
    strict: bool,
    as_json: bool,
    quiet: bool,
) -> None:
    """Land an agentic GRPO trainer's console log (its stdout, saved to a file).

    Reads the blocks the trainer prints and skips everything else: the
    turn-by-turn advantage tables (with the step and group they belong to)
    into `turn_advantages`, the step-end group summaries (verbose or the
    concise `Groups: 6/8 kept (2 filtered), 18/48 finished early` line)
    into `step_groups`, and the eval statistics blocks into `eval_steps`.
    Logging prefixes, colour codes and missing emoji are tolerated; a block
    that cannot be parsed is reported with its line number while the rest
    lands. A log still being written lands what is complete; ingesting it
    again later lands only the new blocks.

    \b
    Example:
      obs ingest trainer-log outputs/grpo_masked/train.log --run agent-1
      python train_grpo.py --mode masked 2>&1 | tee train.log   # (how to keep one)
    """
    if not path.is_file():
        raise click.ClickException(
            f"{path}: no such file; give the file the trainer's stdout was saved to"
        )
    from obs.ingest.keyed import Source
    from obs.ingest.trackers import trainer_log as reader

    source = Source(reader, reader.FORMAT, path)
    _land_histories(settings, path, run_id, reader.FORMAT, strict, as_json, quiet, sources=[source])


def _land_histories(
    settings: Settings,
    path: Path,
    run_id: str | None,
    fmt: str,
    strict: bool,
    as_json: bool,
    quiet: bool,
    sources: list[object] | None = None,
) -> None:
    """The ingest commands of run histories and records: land, report, exit."""
    from obs.ingest.keyed import describe_skipped, land_histories, plan

    try:
        with friendly_errors(settings.debug), _file_progress("ingesting", quiet) as tick:
            planned = sources if sources is not None else plan(path, fmt)
            result = land_histories(
                planned,  # type: ignore[arg-type]
                settings.lake,
                root=path,
                run_id=run_id,
                strict=strict,
                on_source=tick,  # type: ignore[arg-type]
            )
    except OSError as exc:  # the lake cannot be written, say
        if settings.debug:
            raise
        where = exc.filename or settings.lake
        raise click.ClickException(
            f"{where}: {exc.strerror or exc}; check that the path exists and the lake "
            f"({settings.lake}) is writable"
        ) from exc
    unreadable = [f for f in result.files if f.status == "unreadable"]
    only_unreadable = bool(unreadable) and len(unreadable) == len(result.files)
    runs = ", ".join(result.runs) if len(result.runs) <= 4 else f"{len(result.runs)} runs"
    records = fmt in {"eval-logs", "trainer-log"}
    landed = _records_landed(result) if records else _plural(result.points_landed, "point")
    if result.samples_landed or fmt == "reward-monitor":
        landed += f" and {_plural(result.samples_landed, 'reward sample')}"
    elif result.record_rows and not records:
        landed += f" and {_records_landed(result)}"
    skipped = describe_skipped(result.skipped)

    def each_reject(file: FileResult) -> list[str]:
        if fmt == "trainer-log":
            lines = file.reject_lines
            return [
                f"{file.source}:{lines[n]}: {reason}"
                if n < len(lines)
                else str(Path(file.source) / reason)
                for n, reason in enumerate(file.reject_reasons)
            ]
        # the reason starts with the eval file's name
        return [str(Path(file.source) / reason) for reason in file.reject_reasons]

    _report(
        result,
        settings,
        as_json=as_json,
        quiet=quiet,
        label=f"{'run' if len(result.runs) == 1 else 'runs'} {runs}" if runs else "",
        landed=landed,
        read_from=_plural(result.sources, "source")
        + (f" (not metrics, skipped: {skipped})" if skipped else ""),
        unit="record",
        list_each=each_reject if records else None,
    )
    if result.strict_failed:
        raise click.ClickException(
            f"{path}: {_plural(result.rows_rejected, 'record')} rejected and "
            f"{_plural(len(unreadable), 'source')} unreadable (--strict): nothing landed; fix "
            "them or ingest without --strict"
        )
    if only_unreadable:
        first = unreadable[0]
        raise click.ClickException(f"{first.source}: {first.note}")
    read_something = any(f.status == "unchanged" or f.rows_landed for f in result.files)
    if result.rows_rejected and not read_something:
        raise click.ClickException(
            f"{path}: no record could be read ({_plural(result.rows_rejected, 'record')} "
            f"rejected); see {settings.lake}/_rejects"
        )
