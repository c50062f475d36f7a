"""What the server refuses before any route runs: a request for another host.

A web page the user visits can point its own name at 127.0.0.1 (DNS
rebinding) and then read whatever a local server answers under that name.
So the server answers only requests whose ``Host`` names this machine's
loopback (``127.0.0.1``, ``localhost``, ``[::1]``, any port) or the address
it was told to listen on (``--host``) and the names given with
``--allow-host``; any other request, pages, ``/api/*``, the event stream and
the static files alike, gets 400 and one line.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1"})
# host, then an optional port: "name", "name:8765", "[::1]", "[::1]:8765"
HOST_HEADER = re.compile(r"(?:\[(?P<v6>[0-9A-Fa-f:.]+)\]|(?P<name>[^:\[\]]+))(?::[0-9]{1,5})?")
SHOWN_HOST_CHARS = 80

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


def host_name(value: str) -> str:
    """A ``--host`` or ``--allow-host`` value as the Host header names it: lower case,
    no brackets round an IPv6 address."""
    value = value.strip().lower()
    if value.startswith("[") and value.endswith("]"):
        value = value[1:-1]
    return value


def allowed_hosts(host: str, allow: Iterable[str] = ()) -> frozenset[str]:
    """The names a request may ask for: the loopback's, the listening address, ``allow``."""
    return LOOPBACK_NAMES | {host_name(host)} | {host_name(a) for a in allow}


def requested_host(header: str) -> str | None:
    """The host a ``Host`` header names (lower case, no port), None when malformed."""
    match = HOST_HEADER.fullmatch(header.strip())
    if match is None:
        return None
    return (match.group("v6") or match.group("name")).lower()


def refusal(header: str | None) -> str:
    """The one line a request for another host gets."""
    if header is None:
        asked = "no Host header"
    else:
        shown = header.encode("unicode_escape").decode("ascii")
        if len(shown) > SHOWN_HOST_CHARS:
            shown = shown[:SHOWN_HOST_CHARS] + "..."
        asked = f"Host {shown!r}"
    return (
        f"obs serve answers only requests for 127.0.0.1, localhost, [::1] or its --host "
        f"(this one asked for {asked}); open http://127.0.0.1:PORT/, or pass "
        "--allow-host NAME to obs serve\n"
    )


class HostCheck:
    """ASGI middleware: 400 with one line for a request whose Host is not ``allowed``."""

    def __init__(self, app: App, allowed: frozenset[str]) -> None:
        self.app = app
        self.allowed = allowed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # the lifespan (the app serves no websocket)
            await self.app(scope, receive, send)
            return
        header = None
        for key, value in scope.get("headers", []):
            if key == b"host":
                header = value.decode("latin-1")
                break
        if header is not None and requested_host(header) in self.allowed:
            await self.app(scope, receive, send)
            return
        body = refusal(header).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 400,
                "headers": [
                    (b"content-type", b"text/plain; charset=utf-8"),
                    (b"content-length", str(len(body)).encode()),
                    (b"x-content-type-options", b"nosniff"),
                    (b"cache-control", b"no-store"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})
