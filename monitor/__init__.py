"""obs.monitor: the GRPO reward monitor's writer, for use inside a training loop.

``RewardTracker`` writes ``monitoring_data/step_NNNNNN.json`` per step and
``final_metrics.json`` / ``summary.json`` on close; ``obs ingest monitoring``
lands the folder in the lake. Importing it loads the standard library and
numpy only (no pyarrow, duckdb or pandas).

    from obs.monitor import RewardTracker

    with RewardTracker(["format_exact", "answer_match"], "monitoring_data") as tracker:
        tracker.track_step(step, {"format_exact": fmt_rewards, "answer_match": ans_rewards})
"""

from obs.monitor.format import DEFAULT_DIR, RewardTracker

__all__ = ["DEFAULT_DIR", "RewardTracker"]
