"""``obs show``: a multi-turn agent's training as its trainer prints it, from the marts."""

from __future__ import annotations

import click
from obs.cli.errors import friendly_errors
from obs.cli.options import Settings, echo, format_option, pass_settings

run_option = click.option("--run", required=True, help="The run (id, or a unique run name).")


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def show() -> None:
    """A multi-turn agent's training, printed the way its trainer prints it.

    Three views of the agent marts (after `obs build`): the turn-by-turn
    advantage table of an iteration's groups, the end-of-step group summary
    (groups kept and filtered, early exits, tokens), and the eval statistics
    (one step in detail, or the trend over the run).

    \b
    Example:
      obs show advantages --run agent-1 --iteration 10
      obs show step --run agent-1 --iteration 10 --verbose
      obs show eval --run agent-1 --step 10
    """


@show.command()
@run_option
@click.option("--iteration", type=int, required=True, metavar="N", help="The iteration (step).")
@click.option("--group", "group_id", metavar="ID", help="Only this group.")
@click.option(
    "--groups",
    "limit",
    type=click.IntRange(min=1),
    default=3,
    show_default=True,
    metavar="K",
    help="Without --group: how many groups to show (the first by group id).",
)
@format_option("text", "json", default="text")
@pass_settings
def advantages(
    settings: Settings,
    run: str,
    iteration: int,
    group_id: str | None,
    limit: int,
    output_format: str,
) -> None:
    """The Turn-by-Turn Advantage Table of an iteration's groups.

    One table per group (rows: rollouts, columns: turns; `---` where a
    rollout had stopped), from fct_turn_advantages: advantages given by the
    rollouts or the trainer's log as they are, else computed from turn
    rewards. Without --group, the first K groups by id, and how many more.

    \b
    Example:
      obs show advantages --run agent-1 --iteration 10
      obs show advantages --run agent-1 --iteration 10 --group q-17 --format json
    """
    from obs.reports.agent import advantages_json, advantages_text, load_advantages

    with friendly_errors(settings.debug):
        tables = load_advantages(settings.warehouse, run, iteration, group_id, limit)
    if output_format == "json":
        echo(advantages_json(tables))
    else:
        echo(advantages_text(tables), nl=False)


@show.command()
@run_option
@click.option(
    "--iteration", type=int, metavar="N", help="Only this iteration (default: one line per step)."
)
@click.option("-v", "--verbose", is_flag=True, help="The trainer's full Group Summary block.")
@format_option("text", "json", default="text")
@pass_settings
def step(
    settings: Settings, run: str, iteration: int | None, verbose: bool, output_format: str
) -> None:
    """The end-of-step group summary: groups kept and filtered, early exits.

    From fct_group_summary. The concise line is the trainer's
    (`Groups: 6/8 kept (2 filtered), 18/48 finished early`); --verbose
    prints its Group Summary block with times and tokens, the early exits
    by reason and where the counts came from. Without --iteration, one
    line per iteration of the run.

    \b
    Example:
      obs show step --run agent-1
      obs show step --run agent-1 --iteration 10 --verbose
    """
    from obs.reports.agent import load_group_summary, step_json, step_text

    with friendly_errors(settings.debug):
        summaries = load_group_summary(settings.warehouse, run, iteration)
    if output_format == "json":
        echo(step_json(summaries))
    else:
        echo(step_text(summaries, verbose), nl=False)


@show.command("eval")
@run_option
@click.option(
    "--step",
    "eval_step",
    type=int,
    metavar="N",
    help="Only this eval step, in detail (default: the trend, one line per step).",
)
@format_option("text", "json", default="text")
@pass_settings
def eval_command(settings: Settings, run: str, eval_step: int | None, output_format: str) -> None:
    """The agent's eval statistics: one step in detail, or the trend.

    From fct_eval_steps. With --step: the headline numbers, the trainer's
    Detailed Rubric Statistics block, the change since the previous eval
    and, when a baseline was compared, the beat rate. Without: one line per
    eval step as the trainer's analyze_eval_logs prints it (a baseline
    first).

    \b
    Example:
      obs show eval --run agent-1
      obs show eval --run agent-1 --step 10 --format json
    """
    from obs.reports.agent import eval_json, eval_text, load_eval

    with friendly_errors(settings.debug):
        evals = load_eval(settings.warehouse, run, eval_step)
    if output_format == "json":
        echo(eval_json(evals))
    else:
        echo(eval_text(evals), nl=False)
