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

No product module reaches into another's privates either: a name starting
with ``_`` (``from obs.reports.render import _chart``, ``render._chart``) is
its own module's; a private module (``obs.ingest._workers`` once was one) is its
package's.
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
    for private in ("reports/_mine.py", "ingest/_parquet.py"):
        (tmp_path / private).parent.mkdir(exist_ok=True)
        (tmp_path / private).write_text("")
    module.write_text(
        "def f():\n    from obs.cli.options import Settings\n    import click\n"
        "    import obs.reports.render\n    import obs.core.identity\n"
    )
    assert _breaks([module], FORBIDDEN["ingest"], root=tmp_path) == [
        "ingest/late.py:2: imports obs.cli.options",
        "ingest/late.py:3: imports click",
        "ingest/late.py:4: imports obs.reports.render",
    ]


# The product's folders (the import names obs.<folder>).
PRODUCT = ("ingest", "reports", "cli", "monitor", "runner", "demo", "core", "live", "serve")


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _is_module(name: str, root: Path) -> bool:
    """Whether the dotted ``obs.<folder>...`` name is a module or a package of the checkout."""
    where = root.joinpath(*name.split(".")[1:])
    return where.with_suffix(".py").is_file() or (where / "__init__.py").is_file()


def _private_uses(path: Path, root: Path = ROOT) -> list[str]:
    """Each private name ``path`` takes from another obs module: imported by name, read as
    an attribute of an imported obs module, or a private module outside its package."""
    package = "obs." + path.relative_to(root).parts[0]
    tree = ast.parse(path.read_text(), str(path))
    found: list[tuple[int, str]] = []
    bound: dict[str, str] = {}  # local name -> the obs module or name it was imported as
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("obs."):
            modules = [node.module]
            for alias in node.names:
                name = f"{node.module}.{alias.name}"
                bound[alias.asname or alias.name] = name
                if _is_module(name, root):
                    modules.append(name)  # a module: the package rule below
                elif _private(alias.name):
                    found.append((node.lineno, name))
        elif isinstance(node, ast.Import):
            modules = [a.name for a in node.names if a.name.startswith("obs.")]
            bound.update({a.asname: a.name for a in node.names if a.asname})
        else:
            continue
        for module in modules:
            parts = module.split(".")
            outside = not (module + ".").startswith(package + ".")
            if outside and any(_private(part) for part in parts):
                found.append((node.lineno, module))
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and _private(node.attr)
            and isinstance(node.value, ast.Name)
            and node.value.id in bound
        ):
            found.append((node.lineno, f"{bound[node.value.id]}.{node.attr}"))
    return [f"{path.relative_to(root)}:{line}: uses {name}" for line, name in sorted(found)]


@pytest.mark.parametrize("package", PRODUCT)
def test_no_product_module_uses_another_modules_private_names(package: str) -> None:
    """No exceptions: no product module breaks the rule (ingest/appended.py's import of
    obs.ingest._workers is its own package's private module)."""
    paths = sorted((ROOT / package).rglob("*.py"))
    assert paths
    assert [use for path in paths for use in _private_uses(path)] == []


def test_the_private_name_rule_would_catch_each_way_in(tmp_path: Path) -> None:
    module = tmp_path / "reports" / "sneaky.py"
    module.parent.mkdir()
    for private in ("reports/_mine.py", "ingest/_parquet.py"):
        (tmp_path / private).parent.mkdir(exist_ok=True)
        (tmp_path / private).write_text("")
    module.write_text(
        "from obs.reports.render import _chart, load_dashboard\n"
        "from obs.reports import page\n"
        "import obs.ingest._workers\n"
        "import obs.reports._own as own\n"
        "from obs.reports import _mine\n"
        "from obs.ingest import _parquet\n"
        "def f():\n"
        "    from obs.ingest.appended import _land\n"
        "    return page._theme_json(), page.__name__, own.ok\n"
    )
    assert _private_uses(module, root=tmp_path) == [
        "reports/sneaky.py:1: uses obs.reports.render._chart",
        "reports/sneaky.py:3: uses obs.ingest._workers",
        "reports/sneaky.py:6: uses obs.ingest._parquet",
        "reports/sneaky.py:8: uses obs.ingest.appended._land",
        "reports/sneaky.py:9: uses obs.reports.page._theme_json",
    ]
