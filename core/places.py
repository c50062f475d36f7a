"""Where obs looks when told nothing: the warehouse and the lake, relative to the current folder.

The ``obs`` command's ``--warehouse`` and ``--lake`` default to these paths
(unless ``OBS_WAREHOUSE`` or ``OBS_LAKE`` is set), read from the folder it
runs in. An error about a warehouse or a lake that is not there names the
absolute path it looked at, says where the default lives and how to point
elsewhere, in one line (``no_warehouse``, ``empty_lake``).
"""

from __future__ import annotations

from pathlib import Path

DEFAULT_WAREHOUSE = Path("warehouse/obs.duckdb")
DEFAULT_LAKE = Path("lake")


def _not_there(path: Path, what: str, default: str, option: str, then: str) -> str:
    return (
        f"{path.resolve()}: {what} (the default, {default}, is relative to the current folder;"
        f" {option} points elsewhere); {then}"
    )


def no_warehouse(path: Path, then: str = "run `obs ingest rollouts ...` then `obs build`") -> str:
    """The line for a warehouse file that is not there, ending with ``then`` (what makes one)."""
    return _not_there(
        path, "no warehouse yet", str(DEFAULT_WAREHOUSE), "--warehouse FILE or OBS_WAREHOUSE", then
    )


def empty_lake(path: Path, then: str) -> str:
    """The line for a lake with nothing landed, ending with ``then`` (what lands something)."""
    return _not_there(
        path, "nothing landed in this lake yet", f"{DEFAULT_LAKE}/", "--lake DIR or OBS_LAKE", then
    )
