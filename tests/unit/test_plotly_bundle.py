"""Which Plotly bundle a served page loads (obs.serve.plotly_bundle)."""

from __future__ import annotations

import re

import pytest
from obs.serve import plotly_bundle
from obs.serve.plotly_bundle import CARTESIAN, FULL, bundle_for, cartesian_version


def _block(traces: str) -> str:
    return f'<div class="plot" data-figure-hash="0" data-traces="{traces}"></div>'


@pytest.fixture
def usable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(plotly_bundle, "cartesian_usable", lambda: True)


def test_cartesian_only_pages_get_the_partial_bundle(usable: None) -> None:
    assert bundle_for(_block("heatmap") + _block("bar,scatter")) == CARTESIAN
    assert bundle_for(_block("")) == CARTESIAN  # a chart with no trace ("no data")


def test_one_non_cartesian_chart_takes_the_full_bundle(usable: None) -> None:
    assert bundle_for(_block("scatter") + _block("table")) == FULL
    assert bundle_for(_block("scatter,scattergl")) == FULL
    assert bundle_for(_block("indicator")) == FULL


def test_a_stale_partial_bundle_is_never_used(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(plotly_bundle, "cartesian_usable", lambda: False)
    assert bundle_for(_block("scatter")) == FULL


def test_the_shipped_partial_bundle_names_its_release_and_licence() -> None:
    version = cartesian_version()
    assert version is not None and re.fullmatch(r"\d+\.\d+\.\d+", version)
    licence = plotly_bundle.static_bytes("plotly-cartesian.LICENSE.txt").decode()
    assert licence.startswith("MIT License") and "Plotly" in licence
    # usable exactly when plotly.py writes figures for that release
    from plotly.offline import get_plotlyjs_version

    assert plotly_bundle.cartesian_usable() == (version == get_plotlyjs_version())
