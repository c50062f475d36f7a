"""``obs ingest``: land a source's files in the lake."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

import click
from obs.cli.errors import friendly_errors
from obs.cli.options import Settings, echo_err, pass_settings, progress, quiet_option
from obs.ingest.rollouts import (
    IngestResult,
    RolloutIngester,
    default_run_id,
    plan_rollouts,
)


@click.group()
def ingest() -> None:
    """Land logs a run already writes as parquet in the lake.

    \b
    Example:
      obs ingest rollouts runs/grpo-ifeval/rollout_data --run grpo-ifeval
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


@ingest.command()
@click.argument("words", nargs=-1, required=True, metavar="PATH")
@click.option("--run", "run_id", help="Run id (default: the folder's or file's name).")
@click.option(
    "--iterations",
    type=int,
    multiple=True,
    help="Only these iterations (repeat the option, or list them: --iterations 0 1 2).",
)
@click.option("--iteration", type=int, help="Iteration of a rollout table that carries none.")
@click.option("--strict", is_flag=True, help="Exit 1 when any row is rejected.")
@click.option(
    "--careful",
    is_flag=True,
    help="Read every line in Python (slower): also finds unknown fields that first "
    "appear mid-file in very large dumps.",
)
@click.option(
    "--reward",
    help="Score every row at ingest: gsm8k (built in) or package.module:function "
    "(called with the row as a dict, returns a float).",
)
@click.option(
    "--tokenizer",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="A local tokenizer.json: adds response_tokens (in extra) when scoring with --reward.",
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
    careful: bool,
    reward: str | None,
    tokenizer: Path | None,
    as_json: bool,
    quiet: bool,
) -> None:
    """Land rollouts: a folder of {iteration}.jsonl dumps, or one rollout table.

    Unknown fields land in `extra`; bad lines go to the lake's `_rejects` table
    with file, line and reason while the good ones land. Ingesting the same file
    twice adds nothing; a dump that grew lands only its new complete lines.

    \b
    Example:
      obs ingest rollouts outputs/rollout_data --run grpo-ifeval
      obs ingest rollouts outputs/rollout_data --iterations 0 1 2
      obs ingest rollouts rollouts.parquet --run gsm8k-base --iteration 0
      obs ingest rollouts unscored.parquet --iteration 0 --reward gsm8k
    """
    path, iterations = _path_and_iterations(words, iterations)
    with friendly_errors(settings.debug):
        plan = plan_rollouts(path, iterations=iterations or None, iteration=iteration)
        run = run_id or default_run_id(path)
        files = []
        with (
            RolloutIngester(
                settings.lake,
                run,
                iterations=iterations or None,
                careful=careful,
                reward=reward,
                tokenizer=tokenizer,
            ) as ingester,
            progress(plan, f"ingesting {run}", quiet) as bar,
        ):
            for source in bar:
                files.append(ingester.ingest(source))
        result = IngestResult(run, files)
    _report(result, settings, as_json, quiet)
    if result.rows_landed == 0 and result.rows_rejected > 0:
        raise click.ClickException(
            f"{path}: no row could be read ({result.rows_rejected} rejected); "
            f"see {settings.lake / '_rejects'}"
        )
    if strict and result.rows_rejected:
        raise click.ClickException(
            f"{path}: {result.rows_rejected} rows rejected (--strict); "
            f"see {settings.lake / '_rejects'}"
        )


def _report(result: IngestResult, settings: Settings, as_json: bool, quiet: bool) -> None:
    reasons = Counter(
        reason.split(":")[0] for file in result.files for reason in file.reject_reasons
    )
    if as_json:
        payload = {
            "run_id": result.run_id,
            "lake": str(settings.lake),
            "files": len(result.files),
            "files_skipped": result.files_skipped,
            "rows_landed": result.rows_landed,
            "rows_rejected": result.rows_rejected,
            "reject_reasons": dict(reasons),
        }
        click.echo(json.dumps(payload))
        return
    for file in result.files:
        if file.note and file.note != "already ingested" and not quiet:
            echo_err(f"warning: {file.source}: {file.note}")
    click.echo(
        f"run {result.run_id}: {result.rows_landed} rows landed, "
        f"{result.rows_rejected} rejected, from {len(result.files)} files "
        f"({result.files_skipped} already ingested) -> {settings.lake}"
    )
    if reasons and not quiet:
        for reason, count in reasons.most_common(5):
            echo_err(f"  rejected {count}: {reason}")
    sys.stdout.flush()
