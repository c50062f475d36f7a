"""obs.core: the contracts every part of obs shares, each written once.

``obs.core.errors`` holds the base of every error obs raises on purpose (one
line naming the file and the fix), which the command line prints as its
error line; ``obs.core.identity`` the run-id rule and ``prompt_hash``;
``obs.core.agent_log`` the agentic trainer's console format (its reader,
``obs show`` and the demo's generator share it); ``obs.core.places`` the
default warehouse and lake and the line for one that is not there. It
imports nothing else of obs, so the ingest, the runner and the reports can
all build on it without reaching into each other.
"""
