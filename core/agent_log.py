"""The agentic trainer's console format, the names both its reader and its writers use.

The trainer prints, among its other lines, three kinds of block obs lands
(``obs ingest trainer-log``) and prints back (``obs show``) and the demo's
agent run writes: the turn-by-turn advantage table of each group, the
step-end group summary and the eval's rubric statistics. A block starts with
a title line (``📊 <name>:``); the tables are ruled with 80 box-drawing
characters (wider for a wider header); a turn a rollout did not reach shows
``---``. One module of names, as ``obs.monitor.format`` is for the reward
monitor, so the reader, the printer and the generator cannot drift.
"""

from __future__ import annotations

ADVANTAGE_TABLE = "Turn-by-Turn Advantage Table"
GROUP_SUMMARY = "Group Summary"
RUBRIC_STATISTICS = "Detailed Rubric Statistics"
ALL_GROUPS_FILTERED = "All groups filtered out! Skipping training step."

ADVANTAGE_TITLE = f"📊 {ADVANTAGE_TABLE}:"
GROUP_SUMMARY_TITLE = f"📊 {GROUP_SUMMARY}:"
RUBRIC_TITLE = f"📊 {RUBRIC_STATISTICS}:"
ALL_FILTERED = f"⚠️  {ALL_GROUPS_FILTERED}"

RULE_WIDTH = 80
RULE_CHAR = "─"
# One cell of the advantage table for a turn the rollout did not reach.
MISSING_CELL = "   ---  |"


def rule(width: int = RULE_WIDTH) -> str:
    """A table rule: at least RULE_WIDTH characters, as wide as ``width``."""
    return RULE_CHAR * max(RULE_WIDTH, width)
