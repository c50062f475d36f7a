"""The shared contracts (obs.core): one run-id rule, one prompt hash, one error base."""

from __future__ import annotations

import duckdb
import pytest
from obs.core.errors import ObsError
from obs.core.identity import is_run_id, prompt_hash
from obs.ingest.errors import IngestError
from obs.reports.errors import ReportError
from obs.runner.errors import DbtError


@pytest.mark.parametrize(
    "text", ["Write a haiku.", "", "训练 the model ✓", "line\nbreak", "a'quote\"s", "x" * 5000]
)
def test_core_prompt_hash_is_duckdbs_sha256_prefix(text: str) -> None:
    (expected,) = duckdb.sql("select substr(sha256($1), 1, 16)", params=[text]).fetchone()
    assert prompt_hash(text) == expected
    assert len(expected) == 16 and expected == expected.lower()


@pytest.mark.parametrize(
    ("name", "valid"),
    [
        ("grpo-1", True),
        ("wandb:abc+1@x.y_z", True),
        ("a" * 128, True),
        ("a" * 129, False),
        (".", False),
        ("..", False),
        ("...", True),
        ("my run", False),
        ("a/b", False),
        ("", False),
        ("训练", False),
    ],
)
def test_core_run_id_rule(name: str, valid: bool) -> None:
    assert is_run_id(name) is valid


def test_core_every_package_error_is_an_obs_error() -> None:
    for kind in (IngestError, ReportError, DbtError):
        assert issubclass(kind, ObsError)
    assert not issubclass(ObsError, (IngestError, ReportError, DbtError))
