"""``obs runs``, ``obs analyze``, ``obs compare``, ``obs findings``: run histories, read back."""

from __future__ import annotations

from pathlib import Path

import click
from obs.cli.errors import friendly_errors
from obs.cli.options import Settings, echo, echo_err, marts_of, pass_settings, read_target_option


def _format(*choices: str):  # type: ignore[no-untyped-def]
    return click.option(
        "--format",
        "output_format",
        type=click.Choice(list(choices)),
        default="table",
        show_default=True,
        help="Output format (results on stdout).",
    )


def _pairs(values: tuple[str, ...], option: str) -> list[tuple[str, str]]:
    out = []
    for value in values:
        key, sep, wanted = value.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"{value!r}: write KEY=VALUE", param_hint=option)
        out.append((key, wanted))
    return out


@click.command()
@click.option("--project", help="Only runs of this project (MLflow: experiment).")
@click.option("--tag", help="Only runs with this tag.")
@click.option("--state", help="Only runs in this state (finished, running, crashed, ...).")
@click.option(
    "--config",
    "configs",
    multiple=True,
    metavar="KEY=VALUE",
    help="Only runs whose config has KEY=VALUE (nested keys with dots; repeat for more).",
)
@_format("table", "json")
@pass_settings
def runs(
    settings: Settings,
    project: str | None,
    tag: str | None,
    state: str | None,
    configs: tuple[str, ...],
    output_format: str,
) -> None:
    """List the runs in the warehouse, with what each holds; search the tracker runs.

    Every run: those with a tracker history (name, state, source, steps,
    tags) and those with rollouts or an agent's records only. The filters
    read the tracker's attributes, so only tracker runs match them.

    \b
    Example:
      obs runs
      obs runs --tag power-laws --config lora_rank=16 --format json
    """
    from obs.reports.runs import list_runs
    from obs.reports.runs_format import runs_text, to_json

    with friendly_errors(settings.debug):
        found = list_runs(
            settings.warehouse,
            project=project,
            tag=tag,
            state=state,
            config=_pairs(configs, "--config"),
        )
    echo(to_json(found) if output_format == "json" else runs_text(found), nl=False)
    if output_format == "json":
        echo()


@click.command()
@click.argument("run")
@_format("table", "json", "markdown")
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also write a self-contained HTML run report here.",
)
@read_target_option
@pass_settings
def analyze(
    settings: Settings, run: str, output_format: str, out: Path | None, target: str
) -> None:
    """The analyze-experiment workflow for one run, in one answer.

    Sections: 1 run info (config, state, tags, summary), 2 training metrics,
    3 performance, 4 extraction, 5 rollout reliability, 6 prefix cache,
    7 power law, 8 league, 9 evaluation, 10 the closest runs by config and
    how this one compares, 11 every finding with its evidence and
    hypotheses, and 12 the export command. A section without data says why.
    RUN is a run id or a unique run name. A run without a tracker history
    (rollouts only) is analysed on what it holds (the reward is its
    rollouts' mean score), with a line on stderr saying what is missing.

    \b
    Example:
      obs analyze abc123xy
      obs analyze abc123xy --format markdown > analysis.md
      obs analyze abc123xy --out abc123xy.html
    """
    from obs.reports.runs import analyze as load
    from obs.reports.runs_format import analysis_json, analysis_text

    with friendly_errors(settings.debug):
        warehouse = marts_of(settings, target)
        analysis = load(warehouse, run)
        if out is not None:
            from obs.reports.run_report import write_run_report

            write_run_report(warehouse, analysis, out)
    if output_format == "json":
        echo(analysis_json(analysis))
    else:
        echo(analysis_text(analysis, markdown=output_format == "markdown"), nl=False)
    for line in analysis.missing:
        echo(line, err=True)
    if out is not None:
        echo(f"run report: {out}", err=True)


def _metrics_option(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> list:
    """--metrics a b c (the analyze-experiment tool's form) as well as --metrics a --metrics b."""
    return [v for item in value for v in item.split(",") if v]


def _build_target(ctx: click.Context, param: click.Parameter, value: str) -> str:
    """compare's ``--target``: the build to read, as for the other reading commands; the
    former ``--target METRIC=VALUE`` (now ``--reach``) gets a line naming the new spelling."""
    if value in ("duckdb", "spark"):
        return value
    if "=" in value:
        raise click.BadParameter(
            f"{value}: --target names the build to read (duckdb or spark); "
            f"steps to a value are --reach {value}",
            param_hint="--target",
        )
    raise click.BadParameter(f"{value}: not duckdb or spark", param_hint="--target")


@click.command(context_settings={"allow_extra_args": False})
@click.argument("run_ids", nargs=-1, required=True, metavar="RUN RUN [RUN ...]")
@click.option(
    "--metrics",
    multiple=True,
    callback=_metrics_option,
    help="Metrics to compare: canonical names or keys as logged (default: eval_accuracy, the "
    "held-out accuracy under any framework's name, then loss, reward_mean, elo). Repeat, or "
    "separate with commas.",
)
@click.option(
    "--reach",
    "goals_given",
    multiple=True,
    metavar="METRIC=VALUE",
    help="Steps (and wall time) each run took to reach VALUE (at or below it for loss-like "
    "metrics). Repeat for more metrics.",
)
@_format("table", "json")
@click.option(
    "--target",
    default="duckdb",
    show_default=True,
    metavar="[duckdb|spark]",
    callback=_build_target,
    help="Read the marts of this build: spark reads the parquet tables "
    "`obs build --target spark` wrote, through DuckDB (no Spark session).",
)
@pass_settings
def compare(
    settings: Settings,
    run_ids: tuple[str, ...],
    metrics: list[str],
    goals_given: tuple[str, ...],
    output_format: str,
    target: str,
) -> None:
    """Compare runs: final and best values, steps to a target, throughput, config, prompts.

    Any runs the warehouse has, in the order given: their tracker histories
    (metrics, config) and their rollouts (the prompts they share). A run
    without what another has gets a line on stderr saying what it holds.

    \b
    Example:
      obs compare run-a run-b --metrics loss reward_mean elo
      obs compare run-a run-b run-c --reach reward_mean=0.5 --format json
    """
    from obs.reports.compare import compare as load
    from obs.reports.runs import known_names
    from obs.reports.runs_format import compare_text, to_json

    goals: dict[str, float] = {}
    for key, value in _pairs(goals_given, "--reach"):
        try:
            goals[key] = float(value)
        except ValueError as exc:
            raise click.BadParameter(f"{key}={value}: not a number", param_hint="--reach") from exc
    names = list(run_ids)
    with friendly_errors(settings.debug):
        warehouse = marts_of(settings, target)
        if metrics:
            # click hands `--metrics a b c` (that tool's form) over as metric a and two
            # more RUN arguments: trailing arguments that name a metric and no run
            # are metrics (a mistyped run stays a run, and is reported as unknown).
            runs_found, metrics_found = known_names(warehouse, names)
            while len(names) > 2 and names[-1] not in runs_found and names[-1] in metrics_found:
                metrics.insert(1, names.pop())
        if len(names) < 2:
            raise click.UsageError("give at least two runs")
        result = load(warehouse, names, metrics or None, goals)
    notes = result.pop("notes")
    echo(to_json(result) if output_format == "json" else compare_text(result), nl=False)
    if output_format == "json":
        echo()
    for note in notes:
        echo_err(note)


@click.command()
@click.option("--run", help="Only this run (id or unique name).")
@click.option(
    "--severity",
    type=click.Choice(["info", "warning", "critical"]),
    help="Only findings at least this severe.",
)
@_format("table", "json")
@pass_settings
def findings(settings: Settings, run: str | None, severity: str | None, output_format: str) -> None:
    """Patterns found in run histories, with evidence and hypotheses.

    \b
    Example:
      obs findings --severity warning
      obs findings --run abc123xy --format json
    """
    from obs.reports.runs import load_findings
    from obs.reports.runs_format import full_finding_lines, to_json

    with friendly_errors(settings.debug):
        found = load_findings(settings.warehouse, run, severity)
    if output_format == "json":
        echo(to_json(found))
        return
    if not found:
        echo("no findings")
        return
    current = None
    for finding in found:
        if finding["run_id"] != current:
            current = finding["run_id"]
            echo(f"run {current}")
        for line in full_finding_lines([finding], markdown=False):
            echo(f"  {line}".rstrip())
