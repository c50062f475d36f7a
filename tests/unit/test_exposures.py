"""The chart registry holds together, and every consumer's dbt exposure is written from it.

``models/reports/_reports__exposures.yml`` is generated (``make exposures``):
one exposure per consumer of the warehouse (the dashboards from the chart
registry, the run report, the served pages, the console answers, the exports,
the Python API), each depending on what its queries read; these tests fail
while it is out of date. Whether dbt reads it as meant is the manifest
meta-test's part (tests/integration/test_project_meta.py).
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
from obs.reports.exposures import (
    EXPORTS,
    EXPOSURES_YML,
    RUN_REPORT,
    SERVED_PAGES,
    consumers,
    exposures_yml,
    main,
)
from obs.reports.sql import relations_read

ROOT = Path(__file__).resolve().parents[2]
YML = ROOT / EXPOSURES_YML
MODELS = {path.stem for path in (ROOT / "models").rglob("*.sql")}


def test_exposures_are_up_to_date() -> None:
    assert YML.read_text() == exposures_yml(), "the exposures are out of date: run `make exposures`"


def test_exposures_hold_one_exposure_per_consumer_on_what_its_queries_read() -> None:
    parsed = yaml.safe_load(exposures_yml())["exposures"]
    found = consumers()
    assert [e["name"] for e in parsed] == [c.exposure for c in found]
    assert len({c.exposure for c in found}) == len(found)
    for consumer, exposure in zip(found, parsed, strict=True):
        assert exposure["label"] == consumer.label
        assert exposure["description"].strip() == consumer.description
        read = set().union(*(relations_read(q) for q in consumer.queries))
        assert exposure["depends_on"] == [f"ref('{r}')" for r in sorted(read)] and read
        assert exposure["type"] in {"dashboard", "notebook", "analysis", "ml", "application"}
        assert exposure["owner"] == {"name": "obs"}


def test_exposures_depend_on_models_of_the_project() -> None:
    """Every relation a query reads is a dbt model (a ref dbt can resolve)."""
    for consumer in consumers():
        assert set(consumer.relations) <= MODELS, (consumer.exposure, consumer.relations)


def test_exposures_name_the_staging_reads() -> None:
    """The reads that go to staging (docs/architecture.md, "The read layer") show in lineage."""
    assert "stg_rollouts" in SERVED_PAGES.relations and "stg_rollouts" in EXPORTS.relations
    staged = {c.exposure for c in consumers() if any(r.startswith("stg_") for r in c.relations)}
    assert staged == {SERVED_PAGES.exposure, EXPORTS.exposure}
    assert "int_run_steps" in RUN_REPORT.relations  # the power law's points


def test_exposures_command_checks_and_writes(tmp_path: Path) -> None:
    path = tmp_path / "_reports__exposures.yml"
    path.write_text("version: 2\n\nexposures:\n  - name: stale_dashboard\n")
    with pytest.raises(SystemExit, match="the exposures are out of date; run `make exposures`"):
        main(["--check", "--yml", str(path)])
    main(["--write", "--yml", str(path)])
    assert path.read_text() == exposures_yml()
    main(["--check", "--yml", str(path)])  # up to date: no error


def test_exposures_are_not_in_the_hand_edited_models_yml() -> None:
    text = (ROOT / "models" / "reports" / "_reports__models.yml").read_text()
    assert "exposures:" not in text


def test_a_page_depends_on_the_marts_its_charts_and_own_queries_read() -> None:
    assert set(page_marts(REWARDS)) == set().union(*(query_marts(q) for q in page_queries(REWARDS)))
    assert "rpt_dashboard_settings" in page_marts(TRAINING)  # a lookup (dashboard_settings)
    assert "fct_alerts" in CHARTS["reward_alerts_table"].marts


def test_every_query_belongs_to_a_consumer() -> None:
    """A query file no consumer runs would be missing from the exposures: none is."""
    files = {path.stem for path in (ROOT / "reports" / "queries").glob("*.sql")}
    assert files == {query for c in consumers() for query in c.queries}


@pytest.mark.parametrize("name", sorted(CHARTS))
def test_each_chart_sits_in_a_tab_of_its_page_and_reads_a_query(name: str) -> None:
    chart = CHARTS[name]
    tabs = (*chart.page.tabs, COMPARISON) if chart.page is TRAINING else chart.page.tabs
    assert chart.tab in tabs
    assert chart.queries and all(
        (ROOT / "reports" / "queries" / f"{q}.sql").is_file() for q in chart.queries
    )
    assert chart.title and chart.use_for


def test_every_page_is_a_consumer() -> None:
    assert {page.exposure for page in PAGES} <= {c.exposure for c in consumers()}
