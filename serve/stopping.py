"""A stop asked for while the server starts: kept light (no import of the app or its libraries),
so the command installs it before anything slow is imported."""

from __future__ import annotations

import signal


class EarlyStop:
    """Ctrl-C or SIGTERM before the server is up (imports, binding): remembered, so the
    server stops as soon as it starts (installed first thing by the command)."""

    def __init__(self) -> None:
        self.signal: int | None = None

    def install(self) -> None:
        for number in (signal.SIGINT, signal.SIGTERM):
            signal.signal(number, self.handle)

    def handle(self, number: int, frame: object) -> None:
        self.signal = number
