"""The chart registry holds together, and the dashboards' dbt exposures are written from it.

The exposures block that ends ``models/reports/_reports__models.yml`` is
generated (``make exposures``); these tests fail while it is out of date.
Whether dbt reads it as meant is the manifest meta-test's part
(tests/integration/test_project_meta.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from obs.reports.charts import (
    CHARTS,
    COMPARISON,
    PAGES,
    REWARDS,
    TRAINING,
    page_marts,
    page_queries,
    query_marts,
)
from obs.reports.exposures import MODELS_YML, exposures_block, main, with_exposures

ROOT = Path(__file__).resolve().parents[2]
YML = ROOT / MODELS_YML


def test_exposures_are_up_to_date_with_the_registry() -> None:
    text = YML.read_text()
    assert with_exposures(text) == text, "the exposures are out of date: run `make exposures`"


def test_exposures_block_holds_one_exposure_per_page_on_the_marts_it_reads() -> None:
    parsed = yaml.safe_load(exposures_block())["exposures"]
    assert [e["name"] for e in parsed] == [page.exposure for page in PAGES]
    for page, exposure in zip(PAGES, parsed, strict=True):
        assert exposure["label"] == page.label
        assert exposure["description"].strip() == page.description
        assert exposure["depends_on"] == [f"ref('{mart}')" for mart in page_marts(page)]
        assert exposure["type"] == "dashboard" and exposure["owner"] == {"name": "obs"}


def test_exposures_rewrite_only_the_end_of_the_file() -> None:
    head = "version: 2\n\nmodels:\n  - name: rpt_x\n    description: exposures: not this one\n\n"
    stale = head + "exposures:\n  - name: stale_dashboard\n"
    written = with_exposures(stale)
    assert written == head + exposures_block()
    assert with_exposures(written) == written


def test_exposures_command_checks_and_writes(tmp_path: Path) -> None:
    path = tmp_path / "_reports__models.yml"
    path.write_text("version: 2\n\nexposures:\n  - name: stale_dashboard\n")
    with pytest.raises(SystemExit, match="the exposures are out of date; run `make exposures`"):
        main(["--check", "--yml", str(path)])
    main(["--write", "--yml", str(path)])
    assert path.read_text() == "version: 2\n\n" + exposures_block()
    main(["--check", "--yml", str(path)])  # up to date: no error


def test_a_page_depends_on_the_marts_its_charts_and_own_queries_read() -> None:
    assert set(page_marts(REWARDS)) == set().union(*(query_marts(q) for q in page_queries(REWARDS)))
    assert "rpt_dashboard_settings" in page_marts(TRAINING)  # a lookup (dashboard_settings)
    assert "fct_alerts" in CHARTS["reward_alerts_table"].marts


def test_every_query_belongs_to_a_page() -> None:
    """A query file no page runs would be missing from the exposures: none is."""
    files = {path.stem for path in (ROOT / "reports" / "queries").glob("*.sql")}
    assert files == {query for page in PAGES for query in page_queries(page)}


@pytest.mark.parametrize("name", sorted(CHARTS))
def test_each_chart_sits_in_a_tab_of_its_page_and_reads_a_query(name: str) -> None:
    chart = CHARTS[name]
    tabs = (*chart.page.tabs, COMPARISON) if chart.page is TRAINING else chart.page.tabs
    assert chart.tab in tabs
    assert chart.queries and all(
        (ROOT / "reports" / "queries" / f"{q}.sql").is_file() for q in chart.queries
    )
    assert chart.title and chart.use_for
