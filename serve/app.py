"""The ASGI app: routes, pages, the live version endpoint, the static files.

Built on Starlette (routing, requests, responses, the lifespan) and served
by uvicorn (``run.py``); no HTTP is parsed here. Every route only reads.
URL parts are parameters (bound in SQL, matched against known names),
never SQL text or paths; an unknown run or prompt is a 404 page with one
line and a link home. Every page is rendered by Jinja with autoescaping
(prompts and responses are arbitrary model text and show as text: control
characters and bidirectional controls as visible marks, so none reorders or
hides what is around it), and is served with a Content-Security-Policy that
runs only obs's own scripts.

Live: ``/api/events`` is a stream of server-sent events, one each time the
warehouse's version changes (a round of the followed run published, or
another process's build wrote the file), with the page's run status; pages
fall back to polling ``/api/version`` when the stream is refused.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import json
import re
import threading
import time
import unicodedata
from collections.abc import AsyncIterator, Callable
from importlib import resources
from pathlib import Path
from typing import Any

import anyio
from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from markupsafe import Markup, escape
from obs.core.lake_layout import TIME_FOLDER, parse_time, run_folder
from obs.core.text import CONTROL_PICTURES, MARKED, mark, marked
from obs.reports import boards, served
from obs.reports import page as report_page
from obs.reports.page import embed
from obs.serve.access import Access
from obs.serve.errors import ServeError
from obs.serve.following import Following
from obs.serve.guard import LOOPBACK_NAMES, HostCheck
from obs.serve.plotly_bundle import (
    CARTESIAN,
    CARTESIAN_TRACES,
    FULL,
    bundle_for,
    static_bytes,
    trace_types,
)
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import (
    HTMLResponse,
    JSONResponse,
    PlainTextResponse,
    Response,
    StreamingResponse,
)
from starlette.routing import Route

SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
        "img-src 'self' data: blob:; connect-src 'self'; object-src 'none'; "
        "base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
}
STATIC_TYPES = {".js": "text/javascript", ".css": "text/css"}
# The Plotly script tag of a page with charts (templates/_plotly.html), which a page
# drawing only cartesian traces swaps for the partial bundle's.
PLOTLY_TAG = f'<script src="/static/{FULL}" defer>'
# How long an event stream sleeps between looks at the warehouse's files (another
# process's build); a round of the followed run wakes it at once.
EVENT_LOOK_SECONDS = 0.2
# The run statuses kept per warehouse version (runs the warehouse holds only).
STATUS_RUNS = 256
MAX_RUN_ID = 128  # the longest run id obs lands


def shown(text: object) -> Markup:
    """Model text made safe to lay out, escaped: control characters as visible pictures,
    bidirectional controls and C1 controls as a marked ⟨U+202E⟩ label."""
    value = "" if text is None else str(text)
    escaped = str(escape(value.translate(CONTROL_PICTURES)))

    def badge(match: re.Match[str]) -> str:
        name = unicodedata.name(match.group(), "control character")
        return f'<span class="ctl" title="{name.lower()}">{mark(match.group())}</span>'

    return Markup(MARKED.sub(badge, escaped))


def shown_plain(text: object) -> str:
    """As ``shown``, for places that hold only text (an option of a list): the marks as
    plain text."""
    value = "" if text is None else str(text)
    return marked(value)


def _count(value: object) -> str:
    return "-" if value is None else f"{int(value):,}"  # type: ignore[call-overload]


def _number(value: object, digits: int = 3) -> str:
    if value is None:
        return "-"
    number = float(value)  # type: ignore[arg-type]
    return f"{number:.{digits}f}" if number == number else "NaN"


@functools.cache
def environment() -> Environment:
    env = Environment(
        loader=PackageLoader("obs.serve", "templates"),
        autoescape=select_autoescape(default=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["shown"] = shown
    env.filters["shown_plain"] = shown_plain
    env.filters["count"] = _count
    env.filters["number"] = _number
    env.filters["figure"] = _figure
    # The static dashboards' Plotly template, as they embed it: live.js applies it to
    # every figure (the figures leave it out, see obs.reports.page.embed).
    env.globals["plotly_theme"] = report_page.environment().globals["plotly_theme"]
    return env


def _figure(figure: Any) -> Markup:
    """A chart's block: its figure JSON (never run as script) and a hash of it, so a
    live page redraws it only when it changed. ``figure``: a figure, or its JSON
    as ``embed`` wrote it."""
    if isinstance(figure, Markup):
        content, traces = figure, trace_types(json.loads(str(figure)))
    else:
        content, traces = embed(figure), sorted({str(trace.type) for trace in figure.data})
    digest = hashlib.sha1(str(content).encode()).hexdigest()[:16]
    # the trace types tell the page which Plotly bundle draws it (obs.serve.plotly_bundle)
    return Markup(
        f'<div class="plot" data-figure-hash="{digest}" data-traces="{",".join(traces)}"></div>'
        f'<script type="application/json" class="figure">{content}</script>'
    )


class Server:
    """The app's state: the warehouse access, what it follows, what pages poll."""

    def __init__(self, access: Access, following: Following | None = None) -> None:
        self.access = access
        self.following = following
        # The run status of one version (by run), computed once whatever the pages asking;
        # only runs the warehouse holds, at most STATUS_RUNS of them (an unknown run's
        # status is worked out each time: any text can be asked for).
        self._status: tuple[str, dict[str | None, dict[str, Any]]] = ("", {})
        # The event streams' wake-up: set (and replaced) on the event loop when a round
        # publishes or the server stops.
        self._tick: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.closing = threading.Event()

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        """Called on the event loop at start: rounds wake the event streams from now on."""
        self._loop = loop
        self._tick = asyncio.Event()
        self.access.listen(self.wake)

    def wake(self) -> None:
        """Wake every event stream (from any thread, or a signal handler)."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._ring)

    def _ring(self) -> None:
        if self._tick is not None:
            self._tick.set()
            self._tick = asyncio.Event()

    def close(self) -> None:
        """The server is stopping: every event stream ends now (an open page would
        otherwise hold the shutdown until uvicorn's grace period runs out), pages
        waiting for the warehouse or querying it get the one-line "stopping" page, and
        the followed run starts no new round (the one under way finishes)."""
        self.closing.set()
        self.access.stop()
        if self.following is not None:
            self.following.stopping.set()
        self.wake()

    # ------------------------------------------------------------------ rendering

    def page(self, request: Request, template: str, status: int = 200, **values: Any) -> Response:
        html = (
            environment()
            .get_template(template)
            .render(
                version=self.access.version(),
                following=self.following is not None,
                path=request.url.path,
                **values,
            )
        )
        if PLOTLY_TAG in html and bundle_for(html) == CARTESIAN:
            allowed = ",".join(sorted(CARTESIAN_TRACES))
            html = html.replace(
                PLOTLY_TAG, f'<script src="/static/{CARTESIAN}" data-traces="{allowed}" defer>', 1
            )
        return HTMLResponse(html, status_code=status, headers=SECURITY_HEADERS)

    def not_found(self, request: Request, line: str) -> Response:
        return self.page(request, "not_found.html", status=404, line=line, title="Not found")

    def read(self, request: Request, work: Callable[[Any], Response]) -> Response:
        try:
            return self.access.read(work)
        except ServeError as exc:
            return self.page(request, "busy.html", status=503, line=str(exc), title="Unavailable")

    # ------------------------------------------------------------------ pages

    def home(self, request: Request) -> Response:
        def draw(con: Any) -> Response:
            found = served.runs(con)
            return self.page(request, "home.html", runs=found, title="Runs")

        return self.read(request, draw)

    def run_page(self, request: Request) -> Response:
        """The run's training dashboard (a tab at a time) and its findings and alerts."""
        return self._board(request, "training")

    def rewards_page(self, request: Request) -> Response:
        return self._board(request, "rewards")

    def agent_page(self, request: Request) -> Response:
        return self._board(request, "agent")

    def _board(self, request: Request, kind: str) -> Response:
        run_id = request.path_params["run"]
        wanted = request.query_params.get("tab")
        page = _int_param(request, "page") or 1  # of the reward page's raw data table
        group = request.query_params.get("group")  # the agent page's group heatmap

        def draw_board(con: Any, found: dict[str, Any], wanted: str | None) -> boards.Board:
            if kind == "rewards":
                return boards.rewards(con, found, wanted, page=page)
            if kind == "agent":
                return boards.agent(con, found, wanted, group=group)
            return boards.training(con, found, wanted)

        def draw(con: Any) -> Response:
            found = served.run(con, run_id)
            if found is None:
                return self.not_found(request, f"no run '{run_id}' in this warehouse")
            return self.page(
                request,
                "run.html",
                run=found,
                kind=kind,
                board=draw_board(con, found, wanted),
                findings=served.findings(con, run_id) if kind == "training" else [],
                alerts=served.alerts(con, run_id) if kind == "training" else [],
                title=f"{run_id}: {kind}",
            )

        return self.read(request, draw)

    def report_page(self, request: Request) -> Response:
        """``obs analyze RUN`` and the run report's charts (runs with a tracker history)."""
        run_id = request.path_params["run"]

        def draw(con: Any) -> Response:
            found = served.run(con, run_id)
            if found is None:
                return self.not_found(request, f"no run '{run_id}' in this warehouse")
            if not found["has_history"]:
                return self.not_found(
                    request,
                    f"run '{run_id}' has no tracker history, so no report: land one with "
                    f"obs ingest metrics PATH --run {run_id}",
                )
            text, content = boards.report(self.access.warehouse, run_id)
            return self.page(
                request,
                "report.html",
                run=found,
                kind="report",
                text=text,
                content=content,
                title=f"{run_id}: report",
            )

        return self.read(request, draw)

    def compare_page(self, request: Request) -> Response:
        """Two or more runs side by side: the comparison charts of the runs with rollouts,
        and ``obs compare`` (config differences, metrics, the prompt-level diff)."""
        chosen: list[str] = []
        for value in request.query_params.getlist("runs"):
            chosen += [r for r in value.split(",") if r and r not in chosen]

        def draw(con: Any) -> Response:
            known = {r["run_id"]: r for r in served.runs(con)}
            unknown = [r for r in chosen if r not in known]
            if unknown:
                return self.not_found(request, f"no run '{unknown[0]}' in this warehouse")
            text, line, charts = "", "", []
            if len(chosen) < 2:
                line = "pick two or more runs"
            else:
                with_rollouts = [r for r in chosen if known[r]["has_rollouts"]]
                charts = boards.comparison(con, with_rollouts)
                text, line = self._compare_text(chosen)
            return self.page(
                request,
                "compare.html",
                runs=list(known.values()),
                chosen=chosen,
                charts=charts,
                text=text,
                line=line,
                title="Compare runs",
            )

        return self.read(request, draw)

    def _compare_text(self, chosen: list[str]) -> tuple[str, str]:
        from obs.reports.compare import compare
        from obs.reports.errors import ReportError
        from obs.reports.runs_format import compare_text

        try:
            return compare_text(compare(self.access.warehouse, chosen)), ""
        except ReportError as exc:
            return "", str(exc)

    def prompt(self, request: Request) -> Response:
        run_id = request.path_params["run"]
        prompt_hash = request.path_params["prompt_hash"]
        iteration = _int_param(request, "iteration")
        page = _int_param(request, "page") or 1

        def draw(con: Any) -> Response:
            found = served.run(con, run_id)
            if found is None:
                return self.not_found(request, f"no run '{run_id}' in this warehouse")
            shown_page = served.prompt_page(con, run_id, prompt_hash, iteration, page)
            if shown_page is None:
                return self.not_found(request, f"run '{run_id}' has no prompt '{prompt_hash}'")
            return self.page(
                request,
                "prompt.html",
                run=found,
                p=shown_page,
                shown_chars=served.SHOWN,
                title=f"{run_id}: prompt {prompt_hash}",
            )

        return self.read(request, draw)

    def response_text(self, request: Request) -> Response:
        run_id = request.path_params["run"]
        prompt_hash = request.path_params["prompt_hash"]
        iteration = _int_param(request, "iteration")
        sample = _int_param(request, "sample")
        if iteration is None or sample is None:
            return self.not_found(request, "give ?iteration=N&sample=M")

        def draw(con: Any) -> Response:
            text = served.full_response(con, run_id, prompt_hash, iteration, sample)
            if text is None:
                return self.not_found(request, "no such rollout")
            if request.query_params.get("raw") == "1":
                # the bytes as the model wrote them, saved rather than laid out (a
                # browser applies bidirectional controls to text it shows)
                name = f"response-{iteration}-{sample}.txt"
                headers = {
                    **SECURITY_HEADERS,
                    "Content-Disposition": f'attachment; filename="{name}"',
                }
                return PlainTextResponse(text, headers=headers)
            headers = {**SECURITY_HEADERS, "Content-Disposition": "inline"}
            return PlainTextResponse(shown_plain(text), headers=headers)

        return self.read(request, draw)

    def findings(self, request: Request) -> Response:
        def draw(con: Any) -> Response:
            return self.page(
                request,
                "findings.html",
                findings=served.findings(con),
                alerts=served.alerts(con),
                title="Findings and alerts",
            )

        return self.read(request, draw)

    # ------------------------------------------------------------------ live

    def version(self, request: Request) -> Response:
        """What a page polls when it has no event stream: the warehouse's version, and
        for a run the last iteration or step it landed, when, and how many critical
        alerts and findings it has."""
        run_id = request.query_params.get("run") or None
        version = self.access.version()
        return JSONResponse(self.state(version, run_id), headers=SECURITY_HEADERS)

    async def events(self, request: Request) -> Response:
        """The version endpoint as a stream of server-sent events: one at once, then one
        each time the version changes. Ends when the page goes (Starlette cancels it
        on the disconnect) or the server stops."""
        run_id = request.query_params.get("run") or None

        async def stream() -> AsyncIterator[str]:
            sent = None
            yield "retry: 1000\n\n"
            while not self.closing.is_set():
                tick = self._tick
                version = self.access.version()
                if version != sent:
                    state = await run_in_threadpool(self.state, version, run_id)
                    sent = version
                    yield f"data: {json.dumps(state, default=str)}\n\n"
                    continue
                if tick is None:
                    await anyio.sleep(EVENT_LOOK_SECONDS)
                    continue
                with anyio.move_on_after(EVENT_LOOK_SECONDS):
                    await tick.wait()

        headers = {**SECURITY_HEADERS, "X-Accel-Buffering": "no"}
        return StreamingResponse(stream(), media_type="text/event-stream", headers=headers)

    def state(self, version: str, run_id: str | None) -> dict[str, Any]:
        """What a page hears of a version: the version, the server's clock, the run's status."""
        known_version, statuses = self._status
        if known_version != version:
            statuses = {}
            self._status = (version, statuses)
        status = statuses.get(run_id)
        if status is None:
            status = self._run_status(run_id)
            if status and len(statuses) < STATUS_RUNS:
                statuses[run_id] = status  # a run the warehouse holds
        return {"version": version, "now": time.time(), **status}

    def _run_status(self, run_id: str | None) -> dict[str, Any]:
        if run_id is None or len(run_id) > MAX_RUN_ID:
            return {}
        try:
            found = self.access.read(lambda con: served.run(con, run_id))
        except ServeError:
            return {}
        if found is None:
            return {}
        if found["last_iteration"] is not None:
            last = f"iteration {found['last_iteration']}"
        elif found["last_step"] is not None:
            last = f"step {found['last_step']}"
        else:
            last = ""
        return {
            "last": last,
            "landed_at": landed_at(self.access.lake, run_id),
            "critical": int(found["alerts_critical"]) + int(found["findings_critical"]),
        }

    def static(self, request: Request) -> Response:
        name = request.path_params["name"]
        cached = {"Cache-Control": "max-age=86400"}
        if name == FULL:
            return Response(_plotly_js(), media_type="text/javascript", headers=cached)
        if name == CARTESIAN:
            return Response(static_bytes(CARTESIAN), media_type="text/javascript", headers=cached)
        if name not in {"obs.css", "live.js"}:
            return PlainTextResponse("not found", status_code=404)
        body = resources.files("obs.serve").joinpath("static", name).read_text()
        return Response(body, media_type=STATIC_TYPES[Path(name).suffix])


def landed_at(lake: Path, run_id: str) -> float | None:
    """When the run's newest part was published (seconds since the epoch), from the lake's
    folder names alone."""
    newest = None
    try:
        tables = [t for t in lake.iterdir() if t.is_dir() and not t.name.startswith(".")]
    except OSError:
        return None
    for table in tables:
        folder = table / run_folder(run_id)
        try:
            names = [entry.name for entry in folder.iterdir()]
        except OSError:
            continue
        for name in names:
            match = TIME_FOLDER.match(name)
            if match and (newest is None or match.group(1) > newest):
                newest = match.group(1)
    if newest is None:
        return None
    from datetime import UTC

    return parse_time(newest + "Z").replace(tzinfo=UTC).timestamp()


@functools.cache
def _plotly_js() -> bytes:
    from plotly.offline import get_plotlyjs

    return get_plotlyjs().encode()


WHOLE_NUMBER = re.compile(r"-?[0-9]{1,18}")


class BadParameter(Exception):
    """A query parameter the page cannot use: 400, with this line."""


def _int_param(request: Request, name: str) -> int | None:
    """A whole-number parameter, None when absent or empty; anything but ASCII digits
    (``²``, ``①``, ``1.5``, ``abc``) is a BadParameter, never a guess."""
    text = request.query_params.get(name)
    if text is None or text == "":
        return None
    if WHOLE_NUMBER.fullmatch(text) is None:
        shown = text.encode("unicode_escape").decode("ascii")[:40]
        raise BadParameter(
            f"?{name}={shown}: give a whole number written with the digits 0-9 (such as ?{name}=2)"
        )
    return int(text)


async def _bad_parameter(request: Request, exc: Exception) -> Response:
    return PlainTextResponse(f"{exc}\n", status_code=400, headers=SECURITY_HEADERS)


def create_app(
    access: Access,
    following: Following | None = None,
    hosts: frozenset[str] = LOOPBACK_NAMES,
) -> Starlette:
    """The app over ``access``; with ``following``, its rounds run while the app serves.
    ``hosts``: the names a request's Host may give (``obs.serve.guard``); any other
    request gets 400."""
    server = Server(access, following)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        server.attach(asyncio.get_running_loop())
        if following is not None:
            following.start()
        try:
            yield
        finally:
            server.close()
            if following is not None:
                await run_in_threadpool(following.stop)

    async def missing(request: Request, exc: Exception) -> Response:
        return server.not_found(request, f"no page at {request.url.path}")

    routes = [
        Route("/", server.home),
        Route("/findings", server.findings),
        Route("/runs/{run}", server.run_page),
        Route("/runs/{run}/rewards", server.rewards_page),
        Route("/runs/{run}/agent", server.agent_page),
        Route("/runs/{run}/report", server.report_page),
        Route("/compare", server.compare_page),
        Route("/runs/{run}/prompts/{prompt_hash}", server.prompt),
        Route("/runs/{run}/prompts/{prompt_hash}/response", server.response_text),
        Route("/api/version", server.version),
        Route("/api/events", server.events),
        Route("/static/{name}", server.static),
        Route("/favicon.ico", lambda request: Response(status_code=204)),
    ]
    app = Starlette(
        routes=routes,
        lifespan=lifespan,
        exception_handlers={404: missing, BadParameter: _bad_parameter},
        middleware=[Middleware(HostCheck, allowed=hosts)],
    )
    app.state.server = server
    return app


def as_json(value: Any) -> str:
    return json.dumps(value, default=str)
