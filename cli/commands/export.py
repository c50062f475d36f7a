"""``obs export``: files for the next step of training (difficulty buckets, curriculum)."""

from __future__ import annotations

from pathlib import Path

import click
from obs.cli.errors import friendly_errors
from obs.cli.options import Settings, echo, echo_err, pass_settings
from obs.reports.exports import (
    CURRICULUM_MODES,
    STRATEGIES,
    BucketExport,
    export_buckets,
    export_curriculum,
)


@click.group()
def export() -> None:
    """Write the next step's files from the marts.

    \b
    Example:
      obs export buckets --run gsm8k-base --strategy pass_rate --output-dir buckets/
      obs export curriculum --run grpo-ifeval --out next_run.parquet --mode upsample
    """


@export.command()
@click.option("--run", "run_id", required=True, help="The run.")
@click.option("--iteration", type=int, help="The iteration (default: the run's last).")
@click.option("--strategy", type=click.Choice(STRATEGIES), default="percentile", show_default=True)
@click.option("--output-dir", type=click.Path(file_okay=False, path_type=Path), required=True)
@pass_settings
def buckets(
    settings: Settings, run_id: str, iteration: int | None, strategy: str, output_dir: Path
) -> None:
    """Difficulty-bucket files of one run and iteration, and the ANALYSIS SUMMARY.

    Writes rollouts_with_rewards.parquet, problem_metrics.json,
    problem_buckets.json, rollouts_{bucket}.parquet and summary.json. Problems
    are keyed by data_idx when the source has it, else by prompt_hash.

    \b
    Example:
      obs export buckets --run gsm8k-base --iteration 0 --strategy pass_rate --output-dir out/
    """
    with friendly_errors(settings.debug):
        result = export_buckets(settings.warehouse, run_id, strategy, output_dir, iteration)
    echo_err(analysis_summary(result))
    for path in result.files:
        echo(str(path))


def analysis_summary(result: BucketExport) -> str:
    """The plain-text ANALYSIS SUMMARY block."""
    rule = "=" * 60
    lines = [
        rule,
        "ANALYSIS SUMMARY",
        rule,
        f"run: {result.run_id}   iteration: {result.iteration}   strategy: {result.strategy}",
        f"total problems: {result.total_problems}   (keyed by {result.problem_key})",
        f"total rollouts: {result.total_rollouts}",
        "",
        "bucket distribution:",
    ]
    for bucket, count in sorted(result.bucket_distribution.items()):
        share = count / result.total_problems if result.total_problems else 0.0
        lines.append(f"  {bucket:<12} {count:>6}  ({share:.1%})")
    lines += ["", "overall metrics:"]
    for name, value in result.overall_metrics.items():
        lines.append(f"  {name:<16} {value:.4f}")
    lines.append(rule)
    return "\n".join(lines)


@export.command()
@click.option("--run", "run_id", required=True, help="The run whose marts rank the prompts.")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), required=True)
@click.option("--mode", type=click.Choice(CURRICULUM_MODES), default="upsample", show_default=True)
@pass_settings
def curriculum(settings: Settings, run_id: str, out: Path, mode: str) -> None:
    """The next run's dataset: one row per prompt with text, weight, order and reason.

    upsample: weight = 1 + max(upsampling_score_scaled, 0) (the upsampling
    score on the run's scores scaled to 0..1), halved when stuck solved.
    order: easy to hard by the last iteration's mean@5. drop-solved: every
    prompt but those stuck solved.

    \b
    Example:
      obs export curriculum --run grpo-ifeval --out next.parquet --mode drop-solved
    """
    with friendly_errors(settings.debug):
        result = export_curriculum(settings.warehouse, run_id, out, mode)
    echo_err(f"{result.prompts} prompts written ({result.dropped} dropped), mode {mode}")
    echo(str(result.path))


@export.command("run")
@click.argument("run")
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    help="The JSON file (default: analysis_RUN.json).",
)
@pass_settings
def run_export(settings: Settings, run: str, out: Path | None) -> None:
    """One run in the analyze-experiment export's shape, from the warehouse.

    id, name, state, tags, config, summary, history (one row per step with
    _step and _timestamp), artifacts and a metrics view: so a TensorBoard or
    MLflow run can be handed to a tool that expects a W&B export.

    \b
    Example:
      obs export run abc123xy --out analysis_abc123xy.json
    """
    import json

    from obs.reports.runs import export_run

    with friendly_errors(settings.debug):
        result = export_run(settings.warehouse, run, out or Path(f"analysis_{run}.json"))
    echo(json.dumps(result))


@export.command("tensorboard")
@click.argument("run")
@click.option(
    "--logdir",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help="The run's TensorBoard folder (created when missing).",
)
@click.option(
    "--force",
    is_flag=True,
    help="Replace an earlier `obs export tensorboard` in --logdir.",
)
@pass_settings
def tensorboard(settings: Settings, run: str, logdir: Path, force: bool) -> None:
    """A run's reward monitoring metrics as TensorBoard scalars (needs tensorboardX).

    Writes one event file into LOGDIR, at the marts' step: rewards/{mean,std,
    min,max,total,signal_to_noise,entropy,variance} and training/{kl_divergence,
    policy_entropy,advantage_mean,advantage_std} from fct_reward_steps;
    rewards/functions/{fn}, rewards/functions/{fn}_std and contributions/{fn}
    from fct_reward_function_steps; and the reward monitor's custom-scalars
    layout (Reward Signals, Training Dynamics, Contributions). A null in the
    marts is not written.

    LOGDIR is one TensorBoard run. When it already holds an export, the
    command refuses; --force removes that export's event files
    (*.obs-export) and writes a new one. Event files obs did not write are
    never removed: a LOGDIR holding them is refused, --force or not.

    \b
    Example:
      obs export tensorboard grpo-ifeval --logdir tb/grpo-ifeval
      tensorboard --logdir tb
    """
    from obs.reports.tensorboard_export import export_tensorboard

    with friendly_errors(settings.debug):
        result = export_tensorboard(settings.warehouse, run, logdir, force=force)
    replaced = f", replacing {len(result.replaced)} earlier file(s)" if result.replaced else ""
    echo_err(
        f"run {result.run_id}: {result.scalars} scalars ({len(result.tags)} tags, "
        f"{result.steps} steps, {len(result.reward_functions)} reward functions) "
        f"written to {result.logdir}{replaced}"
    )
    echo(str(result.path))
