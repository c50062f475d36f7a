"""The dashboards' dbt exposures, written from the chart registry.

``models/reports/_reports__models.yml`` ends with an ``exposures:`` block: one
exposure per dashboard page (``charts.PAGES``), depending on every mart and
``rpt_`` model the page's queries read, so dbt's lineage shows what each page
draws from. The block is generated, never edited by hand:

    python -m obs.reports.exposures --write    # or: make exposures

rewrites it from the registry (the rest of the file stays as it is), and
``--check`` (what ``tests/unit/test_exposures.py`` does) fails when it is out
of date.
"""

from __future__ import annotations

import argparse
import textwrap
from collections.abc import Sequence
from pathlib import Path

from obs.reports.charts import PAGES, Page, page_marts
from obs.reports.errors import ReportError

# The file, from the dbt project's folder (a checkout: the folder above reports/).
MODELS_YML = Path("models") / "reports" / "_reports__models.yml"
START = "exposures:\n"
COMMENT = (
    "  # The dashboards obs renders, so dbt's lineage shows what each draws from.\n"
    "  # Generated from the chart registry (obs.reports.charts) by `make exposures`:\n"
    "  # change the registry, not this block (tests/unit/test_exposures.py checks it).\n"
)


def exposure_lines(page: Page) -> list[str]:
    """One page's exposure, as the yml's lines."""
    return [
        f"  - name: {page.exposure}",
        f"    label: {page.label}",
        "    type: dashboard",
        "    maturity: high",
        "    description: >",
        *textwrap.wrap(
            page.description, width=76, initial_indent=" " * 6, subsequent_indent=" " * 6
        ),
        "    depends_on:",
        *(f"      - ref('{mart}')" for mart in page_marts(page)),
        "    owner:",
        "      name: obs",
    ]


def exposures_block(pages: Sequence[Page] = PAGES) -> str:
    """The ``exposures:`` block for ``pages``: the end of the models yml."""
    return START + COMMENT + "".join(line + "\n" for page in pages for line in exposure_lines(page))


def with_exposures(text: str, pages: Sequence[Page] = PAGES) -> str:
    """``text`` (the models yml) with its exposures block written from the registry.

    The block runs from its ``exposures:`` line to the end of the file; what comes
    before it stays as it is.
    """
    if text.startswith(START):
        return exposures_block(pages)
    at = text.find("\n" + START)
    if at < 0:
        raise ReportError("no top-level `exposures:` block to write (the block ends the file)")
    return text[: at + 1] + exposures_block(pages)


def default_path() -> Path:
    """The models yml of the checkout this module runs from."""
    return Path(__file__).resolve().parents[1] / MODELS_YML


def main(argv: Sequence[str] | None = None) -> None:
    """``--write``: rewrite the block when it differs; ``--check``: fail when it does."""
    parser = argparse.ArgumentParser(
        prog="python -m obs.reports.exposures",
        description="Write (or check) the dashboards' dbt exposures from the chart registry.",
    )
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--write", action="store_true", help="rewrite the exposures block")
    action.add_argument("--check", action="store_true", help="fail when it is out of date")
    parser.add_argument("--yml", type=Path, help=f"the file (default: the checkout's {MODELS_YML})")
    args = parser.parse_args(argv)
    path = args.yml or default_path()
    try:
        text = path.read_text()
        wanted = with_exposures(text)
    except (OSError, ReportError) as exc:
        raise SystemExit(f"{path}: {exc}") from exc
    if text == wanted:
        return
    if args.check:
        raise SystemExit(f"{path}: the exposures are out of date; run `make exposures`")
    path.write_text(wanted)


if __name__ == "__main__":
    main()
