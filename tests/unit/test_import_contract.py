"""The import contract: the libraries never reach into the command line, or into each other.

``obs.ingest`` (parse, validate, land) and ``obs.reports`` (read the marts, draw)
are used from Python on their own, so neither imports ``obs.cli`` or click,
and neither imports the other; ``obs.monitor`` (a training loop's writer, and
the format its files have, which the ingest reads and the TensorBoard export
names its tags by) imports none of them. ``obs.runner`` (running dbt, and
what a build must rebuild) is usable from Python too: it imports neither
``obs.cli`` nor click and raises its own error, never a click one. Read
from the source text (every import statement, also those inside functions),
so a late import cannot slip by.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FORBIDDEN = {
    "ingest": ("obs.cli", "click", "obs.reports"),
    "reports": ("obs.cli", "click", "obs.ingest"),
    "monitor": ("obs.cli", "click", "obs.reports", "obs.ingest"),
    "runner": ("obs.cli", "click"),
    # the demo generators build on the shared formats only (obs.core), so the
    # tests' data never depends on the code it tests
    "demo": ("obs.cli", "click", "obs.reports", "obs.ingest", "obs.runner", "obs.monitor"),
    # following a run composes the libraries, never the command line
    "live": ("obs.cli", "click"),
    # the server reads the marts through obs.reports and follows through obs.live; it
    # never lands or builds by itself, nor uses the command line
    "serve": ("obs.cli", "click", "obs.ingest", "obs.demo", "obs.monitor"),
    # the shared contracts build on nothing else of obs
    "core": (
        "obs.cli",
        "click",
        "obs.reports",
        "obs.ingest",
        "obs.runner",
        "obs.monitor",
        "obs.demo",
    ),
}


def _imports(path: Path) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.append((node.lineno, node.module))
    return found


def _breaks(paths: list[Path], forbidden: tuple[str, ...], root: Path = ROOT) -> list[str]:
    return [
        f"{path.relative_to(root)}:{line}: imports {name}"
        for path in paths
        for line, name in _imports(path)
        if any(name == f or name.startswith(f + ".") for f in forbidden)
    ]


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_library_packages_import_no_command_line_and_no_sibling(package: str) -> None:
    paths = sorted((ROOT / package).rglob("*.py"))
    assert paths
    assert _breaks(paths, FORBIDDEN[package]) == []


def test_the_contract_would_catch_a_late_import(tmp_path: Path) -> None:
    module = tmp_path / "ingest" / "late.py"
    module.parent.mkdir()
    module.write_text(
        "def f():\n    from obs.cli.options import Settings\n    import click\n"
        "    import obs.reports.render\n    import obs.core.identity\n"
    )
    assert _breaks([module], FORBIDDEN["ingest"], root=tmp_path) == [
        "ingest/late.py:2: imports obs.cli.options",
        "ingest/late.py:3: imports click",
        "ingest/late.py:4: imports obs.reports.render",
    ]
