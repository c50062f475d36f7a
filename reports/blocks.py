"""The blocks a page is made of, whatever writes it: a chart, tiles, an advice list, a
table, a note, and the group heatmap's chart with its selector.

The static pages (``obs render-dashboard``: ``reports/templates/_blocks.html``) and
the served ones (``obs serve``: ``serve/templates/_board.html``) draw the same blocks,
each template set in its own way (a figure embedded as JSON for the page's script, or
drawn by the server's live pages; a table paged in the browser, or a page at a time
by the server). A block holds what it shows, never how: the texts are the sources'
own, escaped by whichever template writes them. ``kind`` names the block for the
templates.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple

import plotly.graph_objects as go


@dataclass(frozen=True)
class ChartBlock:
    """A chart drawn for one page: ``name`` is its registry name (or the run report's
    section), ``div_id`` names it on a page holding several runs (``<chart>__<run>``)."""

    kind: ClassVar[str] = "chart"
    name: str
    title: str
    use_for: str
    figure: go.Figure
    div_id: str
    wide: bool = True


class Tile(NamedTuple):
    label: str
    value: str


@dataclass(frozen=True)
class Tiles:
    """A block of numbers (the reward and agent pages' summary tiles); ``name`` is its
    block id (``summary``)."""

    kind: ClassVar[str] = "tiles"
    name: str
    title: str
    use_for: str
    tiles: list[Tile]


@dataclass(frozen=True)
class Advice:
    """The reward quality report's issues, warnings and recommendations."""

    kind: ClassVar[str] = "advice"
    title: str
    use_for: str
    issues: list[str]
    warnings: list[str]
    recommendations: list[str]


class TablePage(NamedTuple):
    rows: list[list[str]]
    page: int  # 1-based, within 1..pages
    pages: int
    total: int  # rows in the table (all its pages)


@dataclass(frozen=True)
class Table:
    """A table of formatted cells shown ``page_size`` rows at a time (the reward page's
    raw data); ``note`` says which rows it holds."""

    kind: ClassVar[str] = "table"
    div_id: str
    title: str
    use_for: str
    columns: list[str]
    rows: list[list[str]]
    page_size: int
    note: str

    def page(self, number: int) -> TablePage:
        """Page ``number`` of the rows (the nearest page there is)."""
        pages = max(1, -(-len(self.rows) // self.page_size))
        number = min(max(number, 1), pages)
        start = (number - 1) * self.page_size
        return TablePage(self.rows[start : start + self.page_size], number, pages, len(self.rows))


@dataclass(frozen=True)
class Note:
    """A sentence about the page's data, or one in place of a tab's charts when the run
    has none of their data."""

    kind: ClassVar[str] = "note"
    title: str
    text: str


@dataclass(frozen=True)
class Groups:
    """The group heatmap with its selector: ``chart`` draws ``entries[chosen]`` (the
    entries latest iteration first, each with ``iteration``, ``group_id``, ``label``
    and its cells)."""

    kind: ClassVar[str] = "groups"
    chart: ChartBlock
    entries: list[dict[str, Any]]
    note: str
    chosen: int = 0

    @property
    def name(self) -> str:
        return self.chart.name

    @property
    def options(self) -> list[tuple[int, list[tuple[int, str]]]]:
        """The entries' positions and labels by iteration, in their order."""
        iterations: dict[int, list[tuple[int, str]]] = {}
        for index, entry in enumerate(self.entries):
            iterations.setdefault(entry["iteration"], []).append((index, entry["label"]))
        return list(iterations.items())

    @staticmethod
    def key(entry: dict[str, Any]) -> str:
        """An entry's name in a URL: ``iteration/group_id``."""
        return f"{entry['iteration']}/{entry['group_id']}"


Block = ChartBlock | Tiles | Advice | Table | Note | Groups


@dataclass(frozen=True)
class Section:
    """One tab's blocks of one run: ``id`` names the tab on the page."""

    id: str
    title: str
    blocks: list[Block]
