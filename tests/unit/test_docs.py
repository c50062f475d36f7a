"""The user's pages: README.md and docs/*.md.

* every relative link points to a file of the repository that exists (and, with a
  ``#fragment``, to a heading of that page), never outside the repository;
* every ``obs <command>`` in a fenced code block is a command of the CLI
  (``obs.cli.main.COMMANDS``), and ``obs <group> <sub>`` a subcommand of that group;
* README.md stays the first hour's page: at most 300 lines.
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import click
import pytest
from obs.cli.main import COMMANDS, cli

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]
README_MAX_LINES = 300

# [text](target) and [text](target "title"); images too. Inline code is removed first.
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^\s*(```|~~~)")
INLINE_CODE = re.compile(r"`[^`\n]*`")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
# Global options of `obs` that come before the command: those that take a value, and flags.
GLOBAL_WITH_VALUE = {"--warehouse", "--lake"}
GLOBAL_FLAGS = {"--debug", "--version", "-h", "--help"}


def _prose_and_code(text: str) -> tuple[list[tuple[int, str]], list[tuple[int, str]]]:
    """The page's lines outside fenced code blocks, and those inside, with line numbers."""
    prose: list[tuple[int, str]] = []
    code: list[tuple[int, str]] = []
    fence: str | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        marker = FENCE.match(line)
        if marker and (fence is None or marker.group(1) == fence):
            fence = marker.group(1) if fence is None else None
            continue
        (code if fence else prose).append((number, line))
    return prose, code


def _slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as '-'."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).replace("`", "").lower()
    kept = "".join(c for c in text if c in " -_" or unicodedata.category(c)[0] in ("L", "N"))
    return kept.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    prose, _ = _prose_and_code(page.read_text(encoding="utf-8"))
    seen: dict[str, int] = {}
    anchors = set()
    for _, line in prose:
        match = HEADING.match(line)
        if not match:
            continue
        slug = _slug(match.group(2))
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        anchors.add(slug if count == 0 else f"{slug}-{count}")
    return anchors


def _links(page: Path) -> list[tuple[int, str]]:
    prose, _ = _prose_and_code(page.read_text(encoding="utf-8"))
    return [
        (number, target)
        for number, line in prose
        for target in LINK.findall(INLINE_CODE.sub("", line))
    ]


def _broken_links(page: Path, root: Path = ROOT) -> list[str]:
    broken = []
    for number, target in _links(page):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE):
            continue  # http:, https:, mailto: ...: not a file of the repository
        where = f"{page.relative_to(root)}:{number}: {target}"
        path_part, _, fragment = target.partition("#")
        if path_part.startswith("/"):
            broken.append(f"{where}: an absolute path; link within the repository")
            continue
        resolved = (page.parent / path_part).resolve() if path_part else page
        if not resolved.is_relative_to(root.resolve()):
            broken.append(f"{where}: outside the repository")
        elif not resolved.exists():
            broken.append(f"{where}: no such file")
        elif fragment and resolved.suffix == ".md" and fragment not in _anchors(resolved):
            broken.append(f"{where}: no heading #{fragment} in {resolved.name}")
    return broken


def _commands_in_code(page: Path) -> list[tuple[int, list[str]]]:
    """Each `obs ...` in the page's fenced blocks: its line and the words after `obs`."""
    _, code = _prose_and_code(page.read_text(encoding="utf-8"))
    found = []
    for number, line in code:
        words = [w.strip("`'\"(;") for w in line.split()]
        for i, word in enumerate(words):
            if word == "obs" or word.endswith("/obs"):
                found.append((number, words[i + 1 :]))
    return found


def _command_errors(page: Path, root: Path = ROOT) -> list[str]:
    errors = []
    context = click.Context(cli)
    for number, rest in _commands_in_code(page):
        words = list(rest)
        while words and (words[0] in GLOBAL_FLAGS or words[0].split("=")[0] in GLOBAL_WITH_VALUE):
            takes_value = words[0] in GLOBAL_WITH_VALUE
            words = words[2:] if takes_value else words[1:]
        if not words or words[0] in GLOBAL_FLAGS:
            continue  # `obs` alone, or `obs --help`
        name = words[0].rstrip(":,.")
        where = f"{page.relative_to(root)}:{number}: obs {name}"
        if name not in COMMANDS:
            errors.append(f"{where}: not a command of obs ({', '.join(sorted(COMMANDS))})")
            continue
        command = cli.get_command(context, name)
        if isinstance(command, click.Group) and len(words) > 1:
            sub = words[1].rstrip(":,.")
            if not sub.startswith("-") and sub not in command.commands:
                errors.append(f"{where} {sub}: not a command of obs {name}")
    return errors


# --------------------------------------------------------------------------- the pages


def test_the_pages_exist() -> None:
    assert README.exists()
    assert len(PAGES) > 1, "docs/*.md: no page"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_point_to_files_that_exist(page: Path) -> None:
    assert _broken_links(page) == []


def test_every_docs_page_is_reachable_from_the_readme() -> None:
    linked = {(README.parent / target.partition("#")[0]).resolve() for _, target in _links(README)}
    assert [p.name for p in PAGES[1:] if p.resolve() not in linked] == []


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_obs_commands_in_code_blocks_are_commands_of_the_cli(page: Path) -> None:
    assert _command_errors(page) == []


def test_readme_commands_are_checked() -> None:
    # The README shows commands in code blocks: the test above has something to check.
    assert len(_commands_in_code(README)) >= 10


def test_readme_is_at_most_300_lines() -> None:
    lines = len(README.read_text(encoding="utf-8").splitlines())
    assert lines <= README_MAX_LINES, (
        f"README.md has {lines} lines (at most {README_MAX_LINES}): "
        "move reference material to a page of docs/ and link it"
    )


# --------------------------------------------------------------------------- the checks


def test_the_checks_catch_what_they_are_for(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "here.md").write_text("# Here\n\n## A `section`: too\n")
    page = tmp_path / "README.md"
    page.write_text(
        "[ok](docs/here.md) [ok too](docs/here.md#a-section-too) [web](https://example.com)\n"
        "[gone](docs/gone.md) [no heading](docs/here.md#nowhere) [out](../elsewhere.md)\n"
        "[abs](/work/shared/notes.md) `[in code](docs/gone.md)`\n"
        "```sh\n"
        "obs build\n"
        "obs --lake /data/lake summary --run r\n"
        ".venv/bin/obs serve\n"
        "obs summery\n"
        "obs ingest rollout x\n"
        "[also in code](docs/gone.md)\n"
        "```\n"
    )
    assert [line.split(": ", 1)[1] for line in _broken_links(page, root=tmp_path)] == [
        "docs/gone.md: no such file",
        "docs/here.md#nowhere: no heading #nowhere in here.md",
        "../elsewhere.md: outside the repository",
        "/work/shared/notes.md: an absolute path; link within the repository",
    ]
    errors = _command_errors(page, root=tmp_path)
    assert [e.split(": ", 2)[1] for e in errors] == ["obs summery", "obs ingest rollout"]
