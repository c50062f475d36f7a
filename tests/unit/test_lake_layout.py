"""The lake layout is written once in Python (obs.core.lake_layout) and spelled alike in SQL."""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path

import yaml
from obs.core import lake_layout

ROOT = Path(__file__).resolve().parents[2]


def test_a_part_path_round_trips_through_the_layout() -> None:
    moment = datetime(2026, 11, 26, 9, 5, 7, 120034)
    relative = f"{lake_layout.run_folder('grpo-1')}/{lake_layout.time_folder(moment)}/part.parquet"
    assert relative == "run_id=grpo-1/ingested_at=20261126T090507120034Z/part.parquet"
    assert lake_layout.run_of(relative.split("/")[0]) == "grpo-1"
    assert lake_layout.run_of("ingested_at=x") is None
    found = lake_layout.TIME_FOLDER.match(relative.split("/")[1])
    assert found and lake_layout.parse_time(found.group(1) + "Z") == moment
    assert lake_layout.part_time_literal(relative) == "2026-11-26 09:05:07.120034"


def test_the_dbt_project_spells_the_layout_once_and_as_python_does() -> None:
    """One lake source location for every table, one macro parsing the publish time; no
    model or other macro writes the layout out again."""
    sources = yaml.safe_load((ROOT / "models/staging/lake/_lake__sources.yml").read_text())
    [lake] = [s for s in sources["sources"] if s["name"] == "lake"]
    location = lake["meta"]["external_location"]
    assert f"/{{name}}/{lake_layout.PARTS_GLOB}'" in location and "hive_partitioning" in location
    assert all("meta" not in table for table in lake["tables"])
    macro = (ROOT / "macros/lake.sql").read_text()
    assert f"strptime({{{{ column }}}}, '{lake_layout.TIME_FORMAT}')" in macro
    glob_macro = (ROOT / "macros/lake.sql").read_text()
    assert f'"/" ~ table_name ~ "/{lake_layout.PARTS_GLOB}"' in glob_macro
    runs_macro = (ROOT / "macros/incremental.sql").read_text()
    assert f"/{lake_layout.RUN_PARTITION}=([^/]*)/{lake_layout.TIME_PARTITION}=[^/]*/" in runs_macro
    layout_files = {"lake.sql", "incremental.sql"}
    for path in [*(ROOT / "models").rglob("*.sql"), *(ROOT / "macros").rglob("*.sql")]:
        if path.name in layout_files:
            continue
        text = path.read_text()
        assert lake_layout.TIME_FORMAT not in text, f"{path}: use the macro lake_time"
        assert not re.search(r"(run_id|ingested_at)=", text), f"{path}: spells the layout"
        assert "read_parquet(" not in text or path.parent.name == "seeds", path
