"""Start the server: bind the port (one line when it is taken), serve until Ctrl-C or SIGTERM."""

from __future__ import annotations

import contextlib
import signal
import socket
from collections.abc import Callable, Iterator

from obs.serve.access import Access
from obs.serve.app import create_app
from obs.serve.errors import ServeError
from obs.serve.following import Following
from obs.serve.guard import allowed_hosts
from obs.serve.stopping import EarlyStop

LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port``, or a ServeError naming the port and the fix."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise ServeError(
            f"--host {host}: {exc.strerror}; give an address such as 127.0.0.1"
        ) from exc
    family, kind, proto, _name, address = infos[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise ServeError(
            f"{host}:{port}: {exc.strerror or exc} (another obs serve or program uses it?); "
            "stop it or pass --port N"
        ) from exc
    sock.set_inheritable(True)
    return sock


def _stopping_server(base: type) -> type:
    """uvicorn's server, stopped by Ctrl-C or SIGTERM as ``obs watch`` is: the first
    signal finishes the work under way and returns (exit 0), a second stops at once.
    ``on_stop`` runs at the first (it ends the pages' event streams, which would
    otherwise keep their connections, and the server, open)."""

    class Server(base):  # type: ignore[valid-type,misc]
        def __init__(
            self,
            config: object,
            say: Callable[[str], None],
            early: EarlyStop | None,
            on_stop: Callable[[], None],
        ) -> None:
            super().__init__(config)
            self.say = say
            self.early = early
            self.on_stop = on_stop
            self.stopping = False

        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            previous = {n: signal.signal(n, self.handle_exit) for n in STOP_SIGNALS}
            if self.early is not None and self.early.signal is not None:
                self.handle_exit(self.early.signal, None)
            try:
                yield
            finally:
                for number, handler in previous.items():
                    signal.signal(number, handler)

        def handle_exit(self, sig: int, frame: object) -> None:
            if self.stopping:
                self.force_exit = True
                return
            self.stopping = self.should_exit = True
            self.on_stop()
            self.say(f"{signal.Signals(sig).name}: stopping after this round (again to stop now)")

    return Server


def serve(
    access: Access,
    *,
    host: str = "127.0.0.1",
    port: int = 8765,
    following: Following | None = None,
    say: Callable[[str], None] = print,
    early: EarlyStop | None = None,
    allow_hosts: tuple[str, ...] = (),
) -> None:
    """Serve until Ctrl-C or SIGTERM (the round under way finishes first), then return."""
    import uvicorn

    _Server = _stopping_server(uvicorn.Server)
    sock = bind(host, port)
    shown = f"[{host}]" if ":" in host else host
    say(f"obs serve: http://{shown}:{sock.getsockname()[1]}/ (Ctrl-C to stop)")
    if host not in LOCAL_HOSTS:
        say(
            f"warning: listening on {host}: anyone who can reach port {port} can read every "
            "prompt and response in this warehouse (it answers requests for "
            f"{shown} and 127.0.0.1; --allow-host NAME adds the names others type)"
        )
    app = create_app(access, following, allowed_hosts(host, allow_hosts))
    config = uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=5,
    )
    server = _Server(config, say, early, app.state.server.close)
    with contextlib.closing(sock):
        server.run(sockets=[sock])
