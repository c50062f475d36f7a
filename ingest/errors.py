"""Exceptions raised by obs.ingest. Each message is one line naming the file and the fix."""

from __future__ import annotations

from obs.core.errors import ObsError


class IngestError(ObsError):
    """Input that cannot be ingested at all (missing path, unknown format, ...)."""


def install_hint(extra: str) -> str:
    """How to install an optional extra, in both forms the README gives: the
    released package's and a checkout's (whose ``trackers`` extra holds the
    W&B, TensorBoard and MLflow readers)."""
    checkout = "trackers" if extra in TRACKER_EXTRAS else extra
    return f"pip install 'obs-warehouse[{extra}]' (in a checkout: pip install -e '.[{checkout}]')"


TRACKER_EXTRAS = ("wandb", "tensorboard", "mlflow")
