"""Numbers the landing gives: 0, 1, ... within each group, continued across a run's files.

A builder numbers a file's rows from 0 within each group (``sample_idx``
within an iteration and prompt); the ``Sequencer`` adds what the run already
holds for the group (landed parts, and earlier files of the same call), so
numbers continue across files and appends.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from obs.ingest.lake import ManifestEntry, read_part

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Numbering:
    """A column numbered by the core: 0, 1, ... within each group, across the run.

    A builder numbers rows from 0 within each group of one file; the core adds
    what the run already holds for the group (landed parts and earlier files
    of the same call), so numbers continue across files and appends.
    """

    groups: tuple[str, ...]  # the first is the range column (recorded min/max)
    column: str


class Sequencer:
    """Continues a builder's per-file numbering across the run (main process only)."""

    def __init__(self, lake: Path, numbering: Numbering, entries: list[ManifestEntry], table: str):
        self.lake = lake
        self.numbering = numbering
        self.counts: dict[tuple[Any, ...], int] = {}
        self.loaded: set[Any] = set()
        # Parts landed before this call; this call's files are counted as they come.
        prefix = table + "/"
        self.parts = [
            (e.iteration_min, e.iteration_max, part)
            for e in entries
            if e.table_name == table
            for part in e.parts
            if part.startswith(prefix)
        ]

    def _load(self, value: Any) -> None:
        self.loaded.add(value)
        files = [
            str(self.lake / part)
            for low, high, part in self.parts
            if low is not None and high is not None and low <= value <= high
        ]
        missing = [f for f in files if not Path(f).is_file()]
        if missing:
            logger.warning("%s: a landed part is missing (deleted by hand?)", missing[0])
            files = [f for f in files if f not in missing]
        if not files:
            return
        import duckdb  # here: worker processes, which never number, need not load it

        groups = list(self.numbering.groups)
        names = ", ".join(f'"{g}"' for g in groups)
        con = duckdb.connect()
        try:
            rows = con.execute(
                f"select {names}, count(*) from read_parquet(?) "
                f'where "{groups[0]}" = ? group by all',
                [files, value],
            ).fetchall()
        finally:
            con.close()
        for *key, count in rows:
            group = tuple(key)
            self.counts[group] = self.counts.get(group, 0) + int(count)

    def continue_numbers(
        self,
        groups: dict[tuple[Any, ...], int],
        data: Path | None,
        schema: pa.Schema,
        companion: Path | None = None,
    ) -> None:
        """Shift a file's numbers (its rows per group, its staged part) past the run's;
        rewrite its part only when needed. ``companion``: a staged part of another
        table whose rows carry the same numbers (appended.Builder), shifted alike."""
        offsets = {}
        for key in groups:
            if key[0] not in self.loaded:
                self._load(key[0])
            offset = self.counts.get(key, 0)
            if offset:
                offsets[key] = offset
        for key, count in groups.items():
            self.counts[key] = self.counts.get(key, 0) + count
        if offsets and data is not None:
            self._shift(data, offsets, schema)
        if offsets and companion is not None:
            self._shift(companion, offsets, pq.read_schema(companion))

    def _shift(self, part: Path, offsets: dict[tuple[Any, ...], int], schema: pa.Schema) -> None:
        groups, column = list(self.numbering.groups), self.numbering.column
        table = read_part(part, schema)
        keys = zip(*(table.column(g).to_pylist() for g in groups), strict=True)
        shift = pa.array([offsets.get(key, 0) for key in keys], pa.int64())
        shifted = pc.add(table.column(column), shift)
        table = table.set_column(table.schema.get_field_index(column), column, shifted)
        temporary = part.with_name("shifted.parquet")
        pq.write_table(table, temporary, compression="zstd", compression_level=1)
        os.replace(temporary, part)
