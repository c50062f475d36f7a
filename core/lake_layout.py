"""The lake's layout: where a part lives, and what its path says. One definition for every room.

    <lake>/<table>/run_id=<run>/ingested_at=<t>/part.parquet

``t`` is the part's publish time, UTC to the microsecond, in ``TIME_FORMAT``
(the same strftime format in Python and in DuckDB's ``strptime``). Ingest
writes parts there (``obs.ingest.lake``); the build lists them
(``obs.runner``); the dbt project reads them through the lake source (one
``read_parquet`` for every table, ``models/staging/lake/_lake__sources.yml``)
and parses ``t`` with the macro ``lake_time`` (a meta-test checks that
both spell this module's layout).
"""

from __future__ import annotations

import re
from datetime import datetime

RUN_PARTITION = "run_id"
TIME_PARTITION = "ingested_at"
TIME_FORMAT = "%Y%m%dT%H%M%S%fZ"
PART_FILE = "part.parquet"
# The part files of a table, below its folder.
PARTS_GLOB = "*/*/*.parquet"
# A publish-time folder's name; the group is the time's digits.
TIME_FOLDER = re.compile(rf"^{TIME_PARTITION}=(\d{{8}}T\d{{12}})Z$")


def run_folder(run_id: str) -> str:
    """``run_id=<run>``: the folder of a run in a table."""
    return f"{RUN_PARTITION}={run_id}"


def run_of(folder_name: str) -> str | None:
    """The run a ``run_id=<run>`` folder holds, else None."""
    prefix = f"{RUN_PARTITION}="
    return folder_name[len(prefix) :] if folder_name.startswith(prefix) else None


def format_time(moment: datetime) -> str:
    return moment.strftime(TIME_FORMAT)


def parse_time(text: str) -> datetime:
    return datetime.strptime(text, TIME_FORMAT)


def time_folder(moment: datetime) -> str:
    """``ingested_at=<t>``: the folder of a part published at ``moment``."""
    return f"{TIME_PARTITION}={format_time(moment)}"


def part_time_literal(relative: str) -> str:
    """The publish time of a part (``run_id=<run>/ingested_at=<t>/part.parquet``, relative
    to its table) as the text of a SQL timestamp literal."""
    moment = parse_time(relative.split("/")[1][len(TIME_PARTITION) + 1 :])
    return moment.strftime("%Y-%m-%d %H:%M:%S.%f")
