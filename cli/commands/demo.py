"""``obs demo``: generate a synthetic IFEval+GRPO run, ingest, build, summarise, render."""

from __future__ import annotations

from pathlib import Path

import click
from obs.cli.commands.build import run_build
from obs.cli.errors import friendly_errors
from obs.cli.options import Settings, echo, echo_err, pass_settings, quiet_option
from obs.ingest.rollouts import ingest_rollouts
from obs.reports.summary import format_summary, load_summary
from obs.runner.dbt import Dbt


@click.command()
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("demo_data/ifeval-grpo-demo"),
    show_default=True,
    help="Where the generated iteration dumps go.",
)
@click.option(
    "--dashboard",
    type=click.Path(dir_okay=False, path_type=Path),
    default=Path("reports_out/dashboard.html"),
    show_default=True,
    help="Where the run's dashboard goes.",
)
@click.option("--run", "run_id", default="demo", show_default=True, help="Run id to land it as.")
@click.option("--prompts", default=60, show_default=True, help="Prompts in the run.")
@click.option("--iterations", default=12, show_default=True, help="Training iterations.")
@click.option("--samples", default=8, show_default=True, help="Rollouts per prompt (group size).")
@click.option("--seed", default=7, show_default=True, help="Random seed (same seed, same run).")
@quiet_option
@pass_settings
def demo(
    settings: Settings,
    out: Path,
    dashboard: Path,
    run_id: str,
    prompts: int,
    iterations: int,
    samples: int,
    seed: int,
    quiet: bool,
) -> None:
    """Run the whole pipeline on a generated IFEval+GRPO run (learners, forgetters, plateaus).

    Generates the dumps and the run's tracker history (with a gradient spike
    planted), and a multi-turn agent's run beside it (RUN-agent: rollouts
    with turn rewards, eval logs, the trainer's console log); ingests them,
    builds every model, prints the summary and the findings, and ends with
    the paths of the run's dashboard, its run report and the agent's
    dashboard.

    \b
    Example:
      obs demo
      obs --warehouse /tmp/demo.duckdb --lake /tmp/lake demo --prompts 200 --iterations 30
    """
    from obs.demo.rollouts import DemoSpec, write_demo_run
    from obs.reports.render import load_dashboard, render_dashboard  # pandas, plotly: slow

    spec = DemoSpec(prompts=prompts, iterations=iterations, samples_per_prompt=samples, seed=seed)
    with friendly_errors(settings.debug):
        made = write_demo_run(out, spec)
        if not quiet:
            echo_err(f"generated {made.rollouts} rollouts in {len(made.files)} dumps under {out}")
        landed = ingest_rollouts(out, lake=settings.lake, run_id=run_id)
        if not quiet:
            echo_err(
                f"run {run_id}: {landed.rows_landed} rows landed "
                f"({landed.files_skipped} files already ingested)"
            )
        # The run's tracker history too: an analyze-experiment export with a
        # gradient spike planted, so `obs analyze` has something to find.
        from obs.demo.histories import write_seed_export
        from obs.ingest.keyed import ingest_metrics

        export = out.parent / f"{out.name}-history" / f"analysis_{run_id}.json"
        write_seed_export(
            export,
            run_id=run_id,
            steps=max(120, iterations * 10),
            patterns=("grad_spike_reward_collapse",),
            seed=seed,
            name=run_id,
            # the history logs the dumps' own means where they overlap, as a trainer would
            observed=made.logged,
        )
        history = ingest_metrics(export, lake=settings.lake, run_id=run_id)
        if not quiet:
            echo_err(f"run {run_id}: {history.rows_landed} tracker points landed from {export}")
        # A multi-turn agent's run beside it: rollouts with turn rewards, eval
        # logs and the trainer's console log (its times, grad norm and loss).
        from obs.demo.agent import AgentSpec, write_agent_run
        from obs.ingest.keyed import Source, land_histories
        from obs.ingest.trackers import eval_logs, trainer_log

        agent_dir = out.parent / f"{out.name}-agent"
        write_agent_run(agent_dir, AgentSpec(seed=seed))
        agent_run = f"{run_id}-agent"
        agent = ingest_rollouts(agent_dir / "rollouts", lake=settings.lake, run_id=agent_run)
        sources = [
            Source(eval_logs, eval_logs.FORMAT, agent_dir / "eval_logs"),
            Source(trainer_log, trainer_log.FORMAT, agent_dir / "train.log"),
        ]
        records = land_histories(sources, settings.lake, root=agent_dir, run_id=agent_run)
        if not quiet:
            echo_err(
                f"run {agent_run}: {agent.rows_landed} agent rollouts and "
                f"{records.record_rows} eval, step and advantage rows landed from {agent_dir}"
            )
    if not quiet:
        echo_err("building what landed, with its tests (obs build) ...")
    # dbt's node-by-node log is noise here; errors still print (--debug shows all).
    with friendly_errors(settings.debug):
        built = run_build(
            Dbt(settings.warehouse, settings.lake),
            settings,
            () if settings.debug else ("--quiet",),
            unit_tests=False,
        )
    if not quiet:
        echo_err(
            f"obs build: {built} models built, every data test passed"
            if built
            else "obs build: up to date (nothing new landed)"
        )
    with friendly_errors(settings.debug):
        runs = load_summary(settings.warehouse, run_id)
        for run in runs:
            echo(format_summary(run), nl=False)
        echo(f"warehouse: {settings.warehouse}")
        page = render_dashboard(load_dashboard(settings.warehouse, [run_id]), dashboard)
        from obs.reports.run_report import write_run_report
        from obs.reports.runs import analyze

        analysis = analyze(settings.warehouse, run_id)
        found = next(s.data or [] for s in analysis.sections if s.title.startswith("Find"))
        serious = [f for f in found if f["severity"] != "info"]
        echo(
            f"findings: {len(serious)} warning or critical, {len(found) - len(serious)} "
            f"informational (obs analyze {run_id}; obs findings --run {run_id})"
        )
        report = write_run_report(
            settings.warehouse, analysis, dashboard.with_name(f"run_{run_id}.html")
        )
        from obs.reports.agent_dashboard import load_agent_dashboard, render_agent_dashboard

        agent_page = render_agent_dashboard(
            load_agent_dashboard(settings.warehouse, [agent_run]),
            dashboard.with_name(f"agent_{agent_run}.html"),
        )
    echo(f"dashboard: {page}")
    echo(f"run report: {report}")
    echo(f"agent dashboard: {agent_page} (obs show eval --run {agent_run})")
