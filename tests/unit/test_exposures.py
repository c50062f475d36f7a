"""The chart registry holds together, and every consumer's dbt exposure is written from it.

``models/reports/_reports__exposures.yml`` is generated (``make exposures``):
one exposure per consumer of the warehouse (the dashboards from the chart
registry, the run report, the served pages, the console answers, the exports,
the Python API), each depending on what its queries read; these tests fail
while it is out of date. The queries of a consumer other than a dashboard are
read from its modules' source (``module_reads``), and these tests fail when a
module that reads the warehouse belongs to no consumer or names a query the
scan cannot follow to a literal. Whether dbt reads it as meant is the manifest
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
    REGISTRY_MODULES,
    RUN_REPORT,
    SERVED_PAGES,
    UnresolvedQuery,
    consumers,
    exposures_yml,
    main,
    module_reads,
    scan_source,
)
from obs.reports.sql import relations_read

ROOT = Path(__file__).resolve().parents[2]
YML = ROOT / EXPOSURES_YML
MODELS = {path.stem for path in (ROOT / "models").rglob("*.sql")}
QUERIES = {path.stem for path in (ROOT / "reports" / "queries").glob("*.sql")}
PACKAGES = ("ingest", "reports", "cli", "monitor", "runner", "demo", "core", "live", "serve")


def reading_modules() -> set[str]:
    """Every module of the checkout that imports the loader of reports/sql.py."""
    found = set()
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            module = ".".join(("obs", *path.relative_to(ROOT).with_suffix("").parts))
            if module != "obs.reports.sql" and scan_source(module, path.read_text()).calls:
                found.add(module)
    return found


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


def test_every_module_that_reads_the_warehouse_is_a_consumer_s() -> None:
    """A module calling the loader is one of a consumer's (or a dashboard's: the registry's),
    so what it runs is in an exposure."""
    owned = {m for c in consumers() for m in c.modules} | set(REGISTRY_MODULES)
    assert reading_modules() <= owned, reading_modules() - owned
    assert owned <= reading_modules(), owned - reading_modules()  # none listed for nothing


def test_every_query_a_module_names_is_followed_to_a_file() -> None:
    for module in sorted(reading_modules()):
        reads = module_reads(module)
        assert not reads.unresolved, reads.unresolved
        assert set(reads.queries) <= QUERIES, (module, set(reads.queries) - QUERIES)


def test_a_dashboard_module_s_own_queries_are_its_pages() -> None:
    paged = {q for page in PAGES for q in page_queries(page)}
    for module in REGISTRY_MODULES:
        assert set(module_reads(module).queries) <= paged, module


def test_the_consumers_queries_are_those_their_modules_call() -> None:
    assert RUN_REPORT.queries[:2] == ("report_finding_shades", "findings")  # in source order
    assert "prompt_response" in SERVED_PAGES.queries and "findings" in SERVED_PAGES.queries
    assert {"tensorboard_steps", "export_rollouts"} <= set(EXPORTS.queries)


SOURCE = """
from dataclasses import dataclass
from obs.reports import sql
from obs.reports.sql import query_rows as rows, query_value

TABLE = {"a": "from_dict_a", "b": "from_dict_b"}


@dataclass(frozen=True)
class Spec:
    title: str
    query: str


SPECS = (Spec("one", "from_field_one"), Spec(title="two", query="from_field_two"))


class Reader:
    def table(self, con, name):
        return sql.frame(con, name, {})

    def both(self, con):
        return self.table(con, "from_method"), self.table(con, name="from_keyword")


def summary(con, spec: Spec):
    return query_value(con, spec.query)


def read(con, key):
    return rows(con, "literal"), rows(con, TABLE[key])
"""


def test_the_scan_follows_literals_parameters_dicts_and_fields() -> None:
    reads = scan_source("obs.example", SOURCE)
    assert not reads.unresolved
    assert set(reads.queries) == {
        "literal",
        "from_dict_a",
        "from_dict_b",
        "from_field_one",
        "from_field_two",
        "from_method",
        "from_keyword",
    }


@pytest.mark.parametrize(
    ("call", "why"),
    [
        ('rows(con, f"run_ids_{key}")', "`f'run_ids_{key}'` is not a literal"),
        ("rows(con, key + 'x')", "is not a literal"),
        ("rows(con)", "a loader call without a query name"),
        ("rows(con, name)", "no call in the module gives it one"),
        ("list(map(rows, [con]))", "the loader used other than in a call"),
    ],
)
def test_the_scan_reports_a_name_it_cannot_follow(call: str, why: str) -> None:
    source = (
        "from obs.reports.sql import query_rows as rows\n\n"
        f"def read(con, key, name):\n    return {call}\n"
    )
    reads = scan_source("obs.example", source)
    assert not reads.queries
    [error] = reads.unresolved
    assert why in error and "obs/example.py:4" in error


def test_a_consumer_with_an_unresolved_name_fails_to_list_its_queries() -> None:
    # a module the scan cannot follow is an error, never an empty or partial list
    with pytest.raises(UnresolvedQuery, match="no such module"):
        module_reads("obs.reports.no_such_module")
