"""Text from a source, made safe where it is shown: a page, a chart, a JSON block, a terminal.

Prompts, responses, configs and reward function names are arbitrary text.
Shown as they are, a control character rings or hides (BEL, NUL), an escape
sequence drives the terminal (ESC), a bidirectional control reorders what
is around it (U+202E), and ``</script>`` or ``<!--`` ends or breaks the JSON
block a page embeds. One helper per place, used by every writer there.
"""

from __future__ import annotations

import re
from typing import Any

# Control characters show as their Unicode pictures (U+2400...), tabs and newlines as they are.
CONTROL_PICTURES = {c: chr(0x2400 + c) for c in range(32) if chr(c) not in "\n\t"} | {
    0x7F: "\u2421"
}
# Shown as a mark (⟨U+202E⟩) instead of applied: the bidirectional controls (marks,
# embeddings, overrides, isolates), which would reorder the text around them, and
# the C1 control characters, which have no picture.
MARKED = re.compile("[\u0080-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
# What a terminal must not get raw: C0 controls but tab and newline, DEL, the C1
# controls (U+009B starts an escape sequence on some terminals) and the
# bidirectional controls.
CONSOLE_ESCAPED = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]"
)
# The same, newline and tab too: for a line that must stay one line (an error naming a path).
LINE_ESCAPED = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
# What a JSON text embedded in HTML writes as escapes: inside a <script> block "<"
# can open "</script>" or "<!--" (which changes how the block ends), and "&" and ">"
# are escaped beside it. JSON has these only inside strings, where \\u003c is "<".
HTML_UNSAFE_JSON = {ord("<"): "\\u003c", ord(">"): "\\u003e", ord("&"): "\\u0026"}


def mark(character: str) -> str:
    """The visible label of a character that is not applied: ⟨U+202E⟩."""
    return f"\u27e8U+{ord(character):04X}\u27e9"


def marked(text: object) -> str:
    """Text to lay out as plain text (a chart, an option of a list): control characters
    as their pictures, bidirectional and C1 controls as a ⟨U+202E⟩ mark. None: ""."""
    value = "" if text is None else str(text)
    return MARKED.sub(lambda match: mark(match.group()), value.translate(CONTROL_PICTURES))


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code == 0x0A:
        return "\\n"
    if code == 0x09:
        return "\\t"
    if code == 0x0D:
        return "\\r"
    # \\u form from DEL up: still valid inside a JSON string (`obs ... --format json`)
    return f"\\x{code:02x}" if code < 0x20 else f"\\u{code:04x}"


def console_text(text: object) -> str:
    """Text for a terminal: control characters (ESC, BEL, NUL, C1) and bidirectional
    controls written as escapes (``\\x1b``, ``\\u202e``); newlines and tabs kept."""
    return CONSOLE_ESCAPED.sub(_escape, str(text))


def console_line(text: object) -> str:
    """As ``console_text``, newlines and tabs escaped too: one line whatever it holds."""
    return LINE_ESCAPED.sub(_escape, str(text))


def json_in_html(text: str) -> str:
    """A JSON text made safe inside a ``<script type="application/json">`` block."""
    return text.translate(HTML_UNSAFE_JSON)


def marked_strings(value: Any) -> Any:
    """``value`` (a figure's dict, lists, arrays of text) with every string ``marked``,
    so a chart's titles, ticks and hover text show controls as marks (keys are left)."""
    if isinstance(value, str):
        return marked(value) if _needs_mark(value) else value
    if isinstance(value, dict):
        return {key: marked_strings(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(marked_strings(item) for item in value)
    kind = getattr(getattr(value, "dtype", None), "kind", None)
    if kind in {"O", "U"}:
        import numpy as np

        flat = value.ravel()
        if any(isinstance(item, str) and _needs_mark(item) for item in flat):
            result = np.array([marked_strings(item) for item in flat], dtype=object)
            return result.reshape(value.shape)
    return value


def _needs_mark(text: str) -> bool:
    return CONSOLE_ESCAPED.search(text) is not None
