"""The package list in pyproject.toml names every folder of data files it installs.

setuptools warns ("Package would be ignored", about 30 lines a folder) for each
folder that Python could import but the `packages` list does not name; an install
must print no such noise, so every folder holding a package-data file is listed.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_folder_of_package_data_is_a_listed_package() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(config["packages"])
    folders = config["package-dir"]
    expected = set()
    for package, patterns in config["package-data"].items():
        base = ROOT / folders[package]
        for pattern in patterns:
            for path in base.glob(pattern):
                parts = path.parent.relative_to(base).parts
                if parts and all(part.isidentifier() for part in parts):
                    expected.add(".".join([package, *parts]))
    missing = sorted(expected - listed)
    assert missing == [], f"add to [tool.setuptools] packages in pyproject.toml: {missing}"
    assert len(expected) > 20
