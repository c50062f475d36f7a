"""Which Plotly bundle a served page loads.

Plotly's full bundle (plotly.py's ``get_plotlyjs``, 4.8 MB) takes Chromium about
half a second to parse and compile before the first chart can draw. Most pages draw
only cartesian traces (scatter, bar, box, heatmap), which Plotly's own partial
bundle ``plotly.js-cartesian-dist-min`` (1.5 MB, MIT, shipped beside this module in
``static/``) covers. A page whose charts hold only those traces loads it; any other
page (a table, an indicator, WebGL points) loads the full bundle.

The partial bundle is used only when it is the plotly.js release the installed
plotly.py writes figures for (the two must agree on every attribute); after a
plotly upgrade every page loads the full bundle until the partial one is replaced:
``npm pack plotly.js-cartesian-dist-min@<version>`` and copy its
``plotly-cartesian.min.js`` over ``static/plotly-cartesian.min.js``.
"""

from __future__ import annotations

import functools
import re
from importlib import resources

FULL = "plotly.min.js"
CARTESIAN = "plotly-cartesian.min.js"
# The trace types plotly.js-cartesian-dist-min registers (its README lists them).
CARTESIAN_TRACES = frozenset(
    {
        "bar",
        "box",
        "contour",
        "heatmap",
        "histogram",
        "histogram2d",
        "histogram2dcontour",
        "image",
        "pie",
        "scatter",
        "scatterternary",
        "violin",
    }
)
# The banner the partial bundle opens with: "plotly.js (cartesian - minified) v4.1.1".
BANNER = re.compile(r"plotly\.js \(cartesian - minified\) v(\d+\.\d+\.\d+)")
# What a served chart block says of its traces (serve.app's figure filter).
TRACES_ATTRIBUTE = re.compile(r'data-traces="([a-z0-9,]*)"')


def static_bytes(name: str) -> bytes:
    return resources.files("obs.serve").joinpath("static", name).read_bytes()


@functools.cache
def cartesian_version() -> str | None:
    """The plotly.js release of the shipped partial bundle, from its banner."""
    found = BANNER.search(static_bytes(CARTESIAN)[:400].decode("utf-8", "replace"))
    return found.group(1) if found else None


@functools.cache
def cartesian_usable() -> bool:
    """Whether the partial bundle is the release the installed plotly.py writes for."""
    from plotly.offline import get_plotlyjs_version

    return cartesian_version() == get_plotlyjs_version()


def bundle_for(html: str) -> str:
    """The bundle a rendered page needs: the partial one when every chart block in it
    holds only cartesian traces (and the partial bundle is usable), else the full one."""
    if not cartesian_usable():
        return FULL
    for found in TRACES_ATTRIBUTE.finditer(html):
        if not set(filter(None, found.group(1).split(","))) <= CARTESIAN_TRACES:
            return FULL
    return CARTESIAN


def trace_types(figure_json: dict) -> list[str]:
    """The trace types of a figure as JSON (``scatter`` where a trace names none)."""
    return sorted({str(trace.get("type", "scatter")) for trace in figure_json.get("data", [])})
