"""obs's executor: the order a build runs its models in (no dbt, no warehouse)."""

from __future__ import annotations

from obs.runner.engine import awaited
from obs.runner.plan import CompiledPlan, Node


def _node(name: str, materialized: str, parents: list[str]) -> Node:
    return Node(
        unique_id=f"model.obs.{name}",
        name=name,
        kind="model",
        materialized=materialized,
        relation=f'"db"."main"."{name}"',
        parents=[f"model.obs.{p}" for p in parents],
        sources=[],
        sql="select 1",
    )


def test_engine_a_model_reading_a_view_waits_for_the_table_behind_it() -> None:
    """int_x (rebuilt) -> fct_x (a view, not rebuilt) -> fct_y and fct_z (rebuilt):
    fct_y must wait for int_x, or it reads the rows int_x had before the build."""
    nodes = [
        _node("int_x", "incremental", []),
        _node("fct_x", "view", ["int_x"]),
        _node("int_w", "table", []),
        _node("fct_y", "table", ["fct_x", "int_w"]),
        _node("fct_z", "table", ["fct_y", "fct_x"]),
    ]
    plan = CompiledPlan("f", {n.unique_id: n for n in nodes}, [])
    chosen = {f"model.obs.{n}" for n in ("int_x", "fct_y", "fct_z")}
    waits = {
        uid.removeprefix("model.obs."): sorted(p.removeprefix("model.obs.") for p in parents)
        for uid, parents in awaited(plan, chosen).items()
    }
    assert waits == {"int_x": [], "fct_y": ["int_x"], "fct_z": ["fct_y", "int_x"]}
