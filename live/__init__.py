"""obs.live: follow a run while it trains (``obs watch``, and pages that follow a run).

``Follower`` lands what is new under a run's folder (and its tracker
histories), builds what changed, and says what one round did in one line;
``Follower.wait`` returns early when a file under the followed paths changes.
It builds on obs.ingest, obs.runner and obs.reports, never on the command line.
"""
