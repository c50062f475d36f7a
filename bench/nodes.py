"""A copy of the obs dbt project with every mart and report model duplicated.

``copy_project(root, dest, copies)`` copies the project's dbt files
(dbt_project.yml, profiles.yml, models/, macros/, seeds/, data-tests/,
analyses/ where present) into ``dest``; with ``copies`` k > 1 every model file
under models/marts and models/reports gets k - 1 duplicates named
``<model>_x2`` .. ``<model>_xk`` (same SQL: they read the same upstream models).
Their yml is rewritten, not dropped: each duplicate gets the original's
columns, data tests and unit tests under the new name (unit test names get
the same suffix), so a copy with k = 3 has three times the mart/report models
and their tests. Staging and intermediate models are not duplicated.

Build it with ``dbt build --project-dir DEST --profiles-dir DEST`` and
``OBS_WAREHOUSE`` / ``OBS_LAKE`` set to absolute paths (as obs's runner/dbt.py
does); ``node_counts(dest)`` reads the resulting manifest.
"""

from __future__ import annotations

import copy
import json
import shutil
from collections import Counter
from pathlib import Path

import yaml

FILES = ("dbt_project.yml", "profiles.yml", "packages.yml", "dependencies.yml")
FOLDERS = ("models", "macros", "seeds", "data-tests", "analyses", "snapshots")
DUPLICATED = ("models/marts", "models/reports")
MODEL_SUFFIXES = (".sql", ".py")


def copy_project(root: Path, dest: Path, copies: int = 1) -> dict[str, int]:
    """Copy the project to ``dest`` (replaced); returns how many files were duplicated."""
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    for name in FILES:
        if (root / name).is_file():
            shutil.copy2(root / name, dest / name)
    for name in FOLDERS:
        if (root / name).is_dir():
            shutil.copytree(root / name, dest / name)
    duplicated = {"model_files": 0, "yml_models": 0, "unit_tests": 0}
    if copies <= 1:
        return duplicated
    for folder in DUPLICATED:
        base = dest / folder
        if not base.is_dir():
            continue
        models = sorted(p for p in base.rglob("*") if p.suffix in MODEL_SUFFIXES)
        names = {p.stem for p in models}
        for path in models:
            for k in range(2, copies + 1):
                path.with_name(f"{path.stem}_x{k}{path.suffix}").write_bytes(path.read_bytes())
                duplicated["model_files"] += 1
        for path in sorted(base.rglob("*.yml")):
            spec = yaml.safe_load(path.read_text()) or {}
            for k in range(2, copies + 1):
                suffix = f"_x{k}"
                out: dict[str, object] = {"version": 2}
                entries = [m for m in spec.get("models") or [] if m.get("name") in names]
                if entries:
                    out["models"] = [
                        copy.deepcopy(m) | {"name": m["name"] + suffix} for m in entries
                    ]
                    duplicated["yml_models"] += len(entries)
                tests = [t for t in spec.get("unit_tests") or [] if t.get("model") in names]
                if tests:
                    out["unit_tests"] = [
                        copy.deepcopy(t)
                        | {"name": t["name"] + suffix, "model": t["model"] + suffix}
                        for t in tests
                    ]
                    duplicated["unit_tests"] += len(tests)
                if len(out) > 1:
                    target = path.with_name(f"{path.stem}{suffix}.yml")
                    target.write_text(yaml.safe_dump(out, sort_keys=False, width=100))
    return duplicated


def node_counts(project: Path) -> dict[str, int]:
    """Nodes by resource type in the project's last manifest (models, tests, unit tests ...)."""
    manifest = json.loads((project / "target" / "manifest.json").read_text())
    counts = Counter(node["resource_type"] for node in manifest.get("nodes", {}).values())
    counts["unit_test"] += len(manifest.get("unit_tests", {}))
    return dict(counts)


def plan_counts(project: Path, cache: Path) -> dict[str, int]:
    """Nodes by kind (model, test, seed) in obs's compiled plan of the project copy."""
    from obs.runner import plan
    from obs.runner.dbt import environment

    with environment({"OBS_PROJECT": str(project.resolve()), "XDG_CACHE_HOME": str(cache)}):
        compiled = plan.load(plan.plan_fingerprint([]))
    if compiled is None:
        raise ValueError(f"no compiled plan of {project} in {cache}")
    return dict(Counter(node.kind for node in compiled.nodes.values()))
