"""Option decorators and small helpers shared by the obs commands."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import click
from obs.core.text import console_text

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class Settings:
    """Where the warehouse and the lake are, and how loud to be."""

    warehouse: Path
    lake: Path
    debug: bool = False


pass_settings = click.make_pass_decorator(Settings)


def quiet_option(func: F) -> F:
    return click.option(
        "-q",
        "--quiet",
        is_flag=True,
        help="No progress bar and no summary; what went wrong still prints on stderr.",
    )(func)


def format_option(*choices: str, default: str) -> Callable[[F], F]:
    def decorate(func: F) -> F:
        return click.option(
            "--format",
            "output_format",
            type=click.Choice(list(choices)),
            default=default,
            show_default=True,
            help="Output format.",
        )(func)

    return decorate


def echo(message: object = "", nl: bool = True, err: bool = False) -> None:
    """What every console writer prints through: text from a source (prompts, configs,
    names, paths) with its control characters escaped (``obs.core.text.console_text``),
    so an ESC, BEL or NUL in a prompt never reaches the terminal raw."""
    click.echo(console_text(message), nl=nl, err=err)


def echo_err(message: str, nl: bool = True) -> None:
    echo(message, err=True, nl=nl)


@contextmanager
def progress(items: list[T], label: str, quiet: bool) -> Iterator[Iterable[T]]:
    """A progress bar on stderr, shown only for a terminal and when not --quiet."""
    show = not quiet and len(items) > 1 and sys.stderr.isatty()
    if not show:
        yield items
        return
    with click.progressbar(items, label=label, file=sys.stderr, show_pos=True) as bar:
        yield bar


def run_id_callback(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """The ``--run`` option's check: a valid run id, else a usage error (exit 2)."""
    if value is None:
        return None
    from obs.ingest.errors import IngestError
    from obs.ingest.lake import check_run_id

    try:
        return check_run_id(value)
    except IngestError as exc:
        raise click.BadParameter(str(exc).removeprefix("--run "), ctx, param) from exc


def read_target_option(func: F) -> F:
    """``--target``: which build's marts a reporting command reads."""
    return click.option(
        "--target",
        type=click.Choice(["duckdb", "spark"]),
        default="duckdb",
        show_default=True,
        help="Read the marts of this build: spark reads the parquet tables "
        "`obs build --target spark` wrote, through DuckDB (no Spark session).",
    )(func)


def marts_of(settings: Settings, target: str) -> Path:
    """The DuckDB file a reporting command reads: the warehouse, or for ``--target spark``
    the views over the Spark build's tables (``obs.runner.spark.spark_marts``)."""
    if target == "spark":
        from obs.runner.spark import spark_marts

        return spark_marts(settings.warehouse, settings.lake)
    return settings.warehouse
