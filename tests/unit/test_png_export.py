"""PNG export (``obs render-dashboard --format png``) needs kaleido, the optional ``png`` extra."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import plotly.graph_objects as go
import pytest
from obs.reports import chart_files, render
from obs.reports.errors import ReportError

from tests.conftest import Invoke

NO_KALEIDO = "--format png needs kaleido: pip install 'obs-warehouse[png]'"


@pytest.fixture
def without_kaleido(monkeypatch: pytest.MonkeyPatch) -> None:
    """``import kaleido`` fails as it does where the extra is not installed."""
    monkeypatch.setitem(sys.modules, "kaleido", None)


@pytest.mark.usefixtures("without_kaleido")
def test_png_export_without_kaleido_names_the_extra(tmp_path: Path) -> None:
    path = tmp_path / "exploration.png"
    with pytest.raises(ReportError) as raised:
        chart_files.write_png(go.Figure(), path)
    assert str(raised.value) == f"{path}: {NO_KALEIDO}"
    assert not path.exists()


@pytest.mark.usefixtures("without_kaleido")
def test_cli_png_export_without_kaleido_is_one_error_line(
    invoke: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The command prints the library's ReportError as its one ``Error:`` line, exit 1."""

    def write_files(
        dashboard: object, folder: Path, output_format: str, plotlyjs: str, charts: object
    ) -> list[Path]:
        assert output_format == "png"
        return [chart_files.write_png(go.Figure(), folder / "exploration.png")]

    # no warehouse needed: the dashboard's data is never read before the PNG is written
    monkeypatch.setattr(render, "load_dashboard", lambda *args: SimpleNamespace(notes=[]))
    monkeypatch.setattr(chart_files, "render_chart_files", write_files)
    out = tmp_path / "charts"
    result = invoke(["render-dashboard", "--output-dir", out, "--format", "png"], exit_code=1)
    assert result.stderr == f"Error: {out / 'exploration.png'}: {NO_KALEIDO}\n"
    assert result.stdout == ""
