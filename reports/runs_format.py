"""Text, Markdown and JSON forms of what ``obs.reports.runs`` reads from the marts."""

from __future__ import annotations

import json
import math
from datetime import datetime
from typing import Any

from obs.core.text import console_text
from obs.reports.resolve import KINDS
from obs.reports.runs import Analysis, Section

RULE = "=" * 72


def number(value: Any, digits: int = 4) -> str:
    """A value as people read it: ints with separators, floats to 4 significant digits."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        if value.is_integer() and abs(value) < 1e15:
            return f"{int(value):,}"
        if value != 0 and (abs(value) >= 1e6 or abs(value) < 1e-3):
            return f"{value:.{digits - 1}e}"
        return f"{value:.{digits}g}" if abs(value) < 1000 else f"{value:,.1f}"
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S")
    if isinstance(value, list):
        return ", ".join(str(v) for v in value) or "-"
    return str(value)


def to_json(value: Any) -> str:
    """Strict JSON: NaN and Infinity (which JSON has no words for) are null."""
    return json.dumps(_strict(value), default=_default, allow_nan=False)


def _strict(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _strict(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_strict(v) for v in value]
    return value


def _default(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    return str(value)


def _shown(cell: str) -> int:
    """How wide a cell prints on a console, its control characters written as escapes."""
    return len(console_text(cell))


def table(headers: list[str], body: list[list[Any]]) -> list[str]:
    """A plain aligned table (the columns separated by two spaces), aligned as the console
    prints it (a cell's ESC takes the four characters of its escape)."""
    cells = [[number(c) for c in row] for row in body]
    widths = [max(_shown(h), *(_shown(r[i]) for r in cells)) for i, h in enumerate(headers)]

    def line(row: list[str]) -> str:
        padded = (c + " " * (w - _shown(c)) for c, w in zip(row, widths, strict=True))
        return "  ".join(padded).rstrip()

    lines = [line(headers), "  ".join("-" * w for w in widths)]
    lines.extend(line(row) for row in cells)
    return lines


def markdown_table(headers: list[str], body: list[list[Any]]) -> list[str]:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    for row in body:
        lines.append("| " + " | ".join(number(c).replace("|", "\\|") for c in row) + " |")
    return lines


def _pairs(data: dict[str, Any]) -> list[list[Any]]:
    return [[k.replace("_", " "), v] for k, v in data.items()]


def _section_body(section: Section, markdown: bool) -> list[str]:
    make = markdown_table if markdown else table
    data = section.data
    if not section.available:
        return [f"_{section.note}_" if markdown else f"  ({section.note})"]
    if section.title == "Run info":
        config = data.pop("config", {}) or {}
        summary = data.pop("summary", {}) or {}
        lines = make(["field", "value"], _pairs(data))
        if config:
            lines += ["", "Config:" if not markdown else "**Config**", ""]
            lines += make(["key", "value"], [[k, _short(v)] for k, v in _flat(config).items()])
        if summary:
            lines += ["", "Summary:" if not markdown else "**Summary**", ""]
            lines += make(["key", "value"], [[k, _short(v)] for k, v in _flat(summary).items()])
        return lines
    if section.title == "Training metrics":
        headers = ["metric", "key", "first", "last", "min", "max", "recent slope", "trend"]
        body = [
            [r["metric"], r["key"], r["first"], r["last"], r["min"], r["max"],
             r["recent_slope"], _trend_note(r)]
            for r in data
        ]  # fmt: skip
        return make(headers, body)
    if section.title == "Power law":
        headers = ["scope", "fit", "exponent", "prefactor", "R²", "points", "excluded",
                   "target reward", "compute for target"]  # fmt: skip
        body = [
            [f["scope"], f["fit_id"], f["exponent"], f["prefactor"], f["r_squared"], f["n_used"],
             f["n_excluded"], f.get("target_reward"), f.get("compute_for_target")]
            for f in data
        ]  # fmt: skip
        return make(headers, body)
    if section.title == "Evaluation results":
        headers = ["opponent", "step", "win rate", "survival rate", "avg centers"]
        body = [
            [r["opponent"], r["step"], r["win_rate"], r["survival_rate"], r["avg_centers"]]
            for r in data
        ]
        return make(headers, body)
    if section.title == "Compare with similar runs":
        compared: list[str] = []
        for other in data:
            compared.append(
                f"{other['run_id']}: {other['same_config_values']} config values in common"
            )
            diffs = other["config_differences"]
            if diffs:
                compared.append("")
                compared += make(
                    ["config key", *diffs[0]["values"].keys()],
                    [[d["key"], *d["values"].values()] for d in diffs[:12]],
                )
                compared.append("")  # two tables: a blank line keeps Markdown from merging them
            compared += _metric_lines(other["metrics"], markdown)
            compared.append("")
        return compared
    if section.title == "Findings and hypotheses":
        return finding_lines(data, markdown)
    if isinstance(data, dict):
        return make(["field", "value"], _pairs(data))
    return [str(data)]


def _trend_note(row: dict[str, Any]) -> str:
    extra = f", {row['non_finite']} non-finite" if row["non_finite"] else ""
    return str(row["trend"]) + extra


def _flat(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict) and value:
        out: dict[str, Any] = {}
        for key, inner in value.items():
            out.update(_flat(inner, f"{prefix}.{key}" if prefix else str(key)))
        return out
    return {prefix: value}


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def _metric_lines(metrics: list[dict[str, Any]], markdown: bool) -> list[str]:
    if not metrics:
        return []
    make = markdown_table if markdown else table
    body = []
    for entry in metrics:
        for value in entry["values"]:
            body.append(
                [entry["metric"], value["run_id"], value.get("final"), value.get("best"),
                 value.get("steps_to_90pct"), _reached(value, "step"), _reached(value, "seconds")]
            )  # fmt: skip
    headers = ["metric", "run", "final", "best", "steps to 90%", "target at step", "seconds"]
    return make(headers, body)


def _reached(value: dict[str, Any], what: str) -> Any:
    """When a run reached the target: ``never`` when it was logged but never got there."""
    if "target" not in value:
        return None
    reached = value.get("reached") or {}
    return "never" if reached.get("step") is None else reached.get(what)


def finding_lines(findings: list[dict[str, Any]], markdown: bool = False) -> list[str]:
    """Warnings and critical findings in full; informational ones a line each."""
    serious = [f for f in findings if f["severity"] != "info"]
    lines = full_finding_lines(serious, markdown)
    minor = [f for f in findings if f["severity"] == "info"]
    if minor:
        head = f"Informational ({len(minor)}; their evidence: obs findings --run RUN):"
        lines.append(f"**{head}**" if markdown else head)
        for f in minor:
            text = f.get("summary") or f["pattern"]
            lines.append(f"- {text}" if markdown else f"  - {text}")
        lines.append("")
    return lines


def full_finding_lines(findings: list[dict[str, Any]], markdown: bool) -> list[str]:
    lines: list[str] = []
    for f in findings:
        where = (
            f"step {f['first_step']}"
            if f["first_step"] == f["last_step"]
            else f"steps {f['first_step']}-{f['last_step']}"
        )
        head = f"[{f['severity'].upper()}] {f['pattern']} ({where})"
        lines.append(f"**{head}**" if markdown else head)
        if f.get("summary"):
            lines.append(f"  {f['summary']}")
        evidence = f.get("evidence") or {}
        if evidence:
            shown = ", ".join(f"{k}={number(v)}" for k, v in evidence.items())
            lines.append(f"  evidence: {shown}")
        for hypothesis in f.get("hypotheses") or []:
            lines.append(f"  - {hypothesis}")
        lines.append("")
    return lines


def analysis_text(analysis: Analysis, markdown: bool = False) -> str:
    lines: list[str] = []
    if markdown:
        lines += [f"# Analysis of {analysis.name} ({analysis.run_id})", ""]
    else:
        lines += [RULE, f"Analysis of {analysis.name} ({analysis.run_id})", RULE]
    for section in analysis.sections:
        title = f"{section.number}. {section.title}" if section.number else section.title
        lines += ["", f"## {title}", ""] if markdown else ["", title, "-" * len(title)]
        lines += _section_body(section, markdown)
    return "\n".join(lines).rstrip() + "\n"


def analysis_json(analysis: Analysis) -> str:
    return to_json(
        {
            "run_id": analysis.run_id,
            "name": analysis.name,
            "sections": [
                {
                    "number": s.number,
                    "title": s.title,
                    "available": s.available,
                    "note": s.note,
                    "data": s.data,
                }
                for s in analysis.sections
            ],
        }
    )


def compare_text(result: dict[str, Any]) -> str:
    lines = [f"Comparing {len(result['runs'])} runs:"]
    lines += table(
        ["run", "name", "state", "steps", "last step"],
        [
            [r["run_id"], r["name"], state_text(r), r["steps"], r["last_step"]]
            for r in result["runs"]
        ],
    )
    lines += ["", "Metric comparison:"]
    lines += _metric_lines(result["metrics"], False) or ["  (none of the metrics is logged)"]
    if result.get("throughput"):
        lines += ["", "Throughput:"]
        lines += table(
            ["run", "trajectories/s", "training time s"],
            [
                [t["run_id"], t["trajectories_per_second"], t["training_time_s"]]
                for t in result["throughput"]
            ],
        )
    lines += ["", "Config keys that differ:"]
    diffs = result["config_differences"]
    without = result.get("runs_without_config") or []
    if without:
        lines.append(f"  no config landed for {', '.join(without)}")
    if diffs:
        ids = list(diffs[0]["values"])
        lines += table(["key", *ids], [[d["key"], *d["values"].values()] for d in diffs])
    elif len(result["runs"]) - len(without) > 1:
        lines.append("  (none: every config value is the same)")
    if result.get("prompt_diff"):
        lines += ["", "Prompts both runs trained on:"]
        lines += table(
            ["run a", "run b", "shared", "learned only a", "learned only b", "forgotten only a",
             "forgotten only b", "mean final delta (b-a)"],
            [
                [p["run_a"], p["run_b"], p["shared_prompts"], p["learned_only_in_a"],
                 p["learned_only_in_b"], p["forgotten_only_in_a"], p["forgotten_only_in_b"],
                 p["mean_final_score_delta"]]
                for p in result["prompt_diff"]
            ],
        )  # fmt: skip
    return "\n".join(lines) + "\n"


def state_text(run: dict[str, Any]) -> str:
    """A run's state as a source stated it, else ``unknown`` with when its data last landed."""
    state = run.get("state")
    if state is None:
        return "-"
    if state != "unknown":
        return str(state)
    landed = run.get("last_landed_at")
    return f"unknown (last data landed {number(landed)})" if landed else "unknown"


def created_text(run: dict[str, Any]) -> str:
    """When a run started, or ``-`` with why there is no time (a tracker run only)."""
    if run.get("created_at") is not None:
        return number(run["created_at"])
    if run.get("source") is None:  # rollouts only: no tracker to ask
        return "-"
    return "- (no source of this run carries a clock time)"


def runs_text(found: list[dict[str, Any]]) -> str:
    if not found:
        return "no runs match\n"
    words = {kind.key: kind.data for kind in KINDS}
    lines = table(
        ["run id", "name", "state", "sources", "created", "steps", "holds", "tags"],
        [
            [r["run_id"], r["name"], state_text(r), r.get("sources") or r["source"],
             r["created_at"], r["steps"], ", ".join(words[k] for k in r["holds"]), r["tags"]]
            for r in found
        ],
    )  # fmt: skip
    notes = []
    if any(r.get("state") == "unknown" for r in found):
        notes.append(
            "unknown: no source of the run states it (a log with no end record yet, a file"
            " still being written, a trainer_state.json short of max_steps)"
        )
    if any(r["created_at"] is None and r.get("source") is not None for r in found):
        notes.append(
            "created -: no source of the run carries a clock time (trainer_state.json and"
            " eval logs hold none; a reward monitor's timestamps may count from its start)"
        )
    return "\n".join([*lines, *([""] if notes else []), *notes]) + "\n"
