"""The server following a run: ``obs watch``'s rounds, in a thread, as the warehouse's writer.

Each round lands what is new under the followed folder, builds what changed
(``obs.live.Follower``, the same core and the same round line as ``obs
watch``) and, when that changed the warehouse, publishes its version: open
pages hear of it at once (``Access.publish``). A round holds the ``Gate``
for writing: pages wait for it, and it waits for the pages being drawn.
``stop()`` lets the round under way finish.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from obs.live.follow import Follower
from obs.live.notify import Notifier
from obs.serve.access import Access


class Following:
    """A thread of rounds over one folder (and tracker histories) into ``access``'s warehouse."""

    def __init__(
        self,
        access: Access,
        path: Path,
        *,
        run_id: str | None = None,
        metrics: tuple[Path, ...] = (),
        every: float = 10.0,
        say: Callable[[str], None] = print,
        notifier: Notifier | None = None,
    ) -> None:
        self.access = access
        self.follower = Follower(
            access.warehouse, access.lake, path, run_id, metrics, notifier=notifier
        )
        self.every = every
        self.say = say
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, name="obs-follow", daemon=True)

    def start(self) -> None:
        self.access.publish()  # what the warehouse holds before the first round
        self.thread.start()

    def stop(self) -> None:
        """Finish the round under way (its files land whole or not at all), then return."""
        self.stopping.set()
        self.thread.join()
        if self.follower.notifier is not None:
            self.follower.notifier.close()

    def _run(self) -> None:
        while not self.stopping.is_set():
            with self.access.gate.writing():
                done = self.follower.round()
            self.access.publish()
            for line in done.lines():
                self.say(line)
            self.follower.wait(self.stopping, max(0.0, self.every - done.seconds))
