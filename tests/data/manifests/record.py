"""Record what dbt gives obs's plan reader, for the unit tests of runner/manifest.py.

    python -m tests.data.manifests.record

compiles the project in plan mode (as ``obs build`` does) with the dbt-core the
environment has, and writes ``dbt-<major>.<minor>.json``: the records of a few nodes
of each kind (a seed, the staging view of the rollouts, an incremental model with its
markers and the models between, a table mart, a view mart, their data tests, a unit
test, the on-run-start hook) and their compiled SQL. Paths are written relative to
the project (``root_path`` is ``.``). Record again for each dbt-core minor
pyproject.toml allows.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
SCRATCH = re.compile(r"/[^\s\"']*obs-plan-[^/\s\"']+")
MODELS = (
    "seed.obs.metric_aliases",
    "model.obs.stg_rollouts",
    "model.obs.int_rollouts_scored",
    "model.obs.int_prompt_iteration",
    "model.obs.fct_prompt_iteration",
    "model.obs.fct_prompt_learning",
)


def _relative(value: Any, root: str) -> Any:
    if isinstance(value, str):
        # the project's folder and plan mode's scratch folder: no machine's paths
        return SCRATCH.sub("<plan>", value.replace(root, "."))
    if isinstance(value, list):
        return [_relative(v, root) for v in value]
    if isinstance(value, dict):
        return {k: _relative(v, root) for k, v in value.items()}
    return value


def main() -> Path:
    from dbt.version import __version__
    from obs.runner.dbt import project_dir
    from obs.runner.manifest import MERGE_MARKER
    from obs.runner.plan import Compiled, compile_plan

    kept: list[Compiled] = []
    with tempfile.TemporaryDirectory() as cache:
        os.environ["XDG_CACHE_HOME"] = cache
        compile_plan([], "recorded", keep=kept)
    (compiled,) = kept
    nodes = compiled.records["nodes"]
    chosen = list(MODELS)
    chosen += sorted(
        uid
        for uid, node in nodes.items()
        if node["resource_type"] in ("test", "unit_test")
        and set(node["depends_on"].get("nodes", [])) & set(MODELS)
    )
    chosen += [uid for uid, node in nodes.items() if node["resource_type"] == "operation"]
    merges = "analysis.obs.obs_delete_insert"
    chosen.append(merges)
    # the analysis's merge markers of the chosen models only
    compiled.full[merges] = "".join(
        match[0]
        for match in MERGE_MARKER.finditer(compiled.full[merges])
        if json.loads(match["spec"])["node"] in chosen
    )
    root = str(project_dir().resolve())
    record = {
        "dbt_core": __version__,
        "records": {
            "nodes": {uid: nodes[uid] for uid in chosen},
            "sources": {
                uid: source
                for uid, source in compiled.records["sources"].items()
                if any(uid in nodes[n]["depends_on"].get("nodes", []) for n in chosen)
            },
        },
        "full": {uid: compiled.full[uid] for uid in chosen if uid in compiled.full},
        "incremental": {
            uid: compiled.incremental[uid] for uid in chosen if uid in compiled.incremental
        },
    }
    major, minor = __version__.split(".")[:2]
    out = HERE / f"dbt-{major}.{minor}.json"
    out.write_text(json.dumps(_relative(record, root), indent=1, sort_keys=True) + "\n")
    return out


if __name__ == "__main__":
    print(main())
