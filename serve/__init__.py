"""``obs serve``: the warehouse live in the browser, read-only, on 127.0.0.1 by default.

One chart definition, two outputs: the pages draw the figures and run the
queries the static dashboards use (``obs.reports``). With a run's folder the
server follows it as ``obs watch`` does (``obs.live``) and open pages update
without a reload. See ``app.py`` for the routes and ``access.py`` for how it
shares the warehouse with builds.
"""
