"""How obs names a run and a prompt, in one place.

A run id is 1 to 128 letters, digits and ``. _ - + @ :``, and not ``.`` or
``..`` (it names a lake folder: ``run_id=<run>``). A prompt's hash is the
first 16 lowercase hex characters of the SHA-256 of its UTF-8 bytes (DuckDB:
``substr(sha256(prompt), 1, 16)``), the same in every run, so runs compare
prompt by prompt.
"""

from __future__ import annotations

import hashlib
import re

RUN_ID = re.compile(r"^[A-Za-z0-9._+@:-]{1,128}$")
# What a run id may hold, as an error message says it.
RUN_ID_RULE = "use 1 to 128 letters, digits and . _ - + @ : (not '.' or '..')"


def is_run_id(name: str) -> bool:
    """Whether ``name`` is a valid run id."""
    return name not in {".", ".."} and RUN_ID.match(name) is not None


def prompt_hash(prompt: str) -> str:
    """The prompt's hash: 16 hex characters of the SHA-256 of its UTF-8 bytes."""
    return hashlib.sha256(prompt.encode("utf-8")).hexdigest()[:16]
