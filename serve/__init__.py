"""``obs serve``: the warehouse live in the browser, read-only, on 127.0.0.1 by default.

One page model, two outputs: the pages draw the blocks, figures and queries
the static dashboards use (``obs.reports``: ``blocks``, ``boards``, ``served``);
this package holds routing, live updates and access to the warehouse only. With a run's folder the
server follows it as ``obs watch`` does (``obs.live``) and open pages update
without a reload. See ``app.py`` for the routes and ``access.py`` for how it
shares the warehouse with builds.
"""
