"""The fenced code blocks of the README and the docs pages, with their docs-test markers.

The convention (docs/writing-docs.md): a ```python block is run, a ```bash or ```sh block is
run, other languages are not; an HTML comment on the line right before the fence changes that:

    <!-- docs-test: skip (reason) -->    not run (python blocks are still compiled)
    <!-- docs-test: fails (reason) -->   run, and must exit non-zero
    <!-- docs-test: file PATH -->        written to PATH in the page's working directory
                                         (for later blocks of the page), not run
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
DOCS = REPO_ROOT / "docs"
RUN_LANGUAGES = {"python": "python", "py": "python", "bash": "shell", "sh": "shell"}

_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>[^\n`]*)$")
_MARKER = re.compile(r"^\s*<!--\s*docs-test:\s*(?P<action>[a-z-]+)(?P<argument>.*?)\s*-->\s*$")
ACTIONS = ("skip", "fails", "file")


@dataclass(frozen=True)
class Block:
    """One fenced block of a page."""

    page: Path
    line: int  # 1-based line of the opening fence
    language: str
    code: str
    action: str  # "run", "skip", "fails", "file", or "none" (a language that is not run)
    argument: str  # the reason, or the file path

    @property
    def kind(self) -> str | None:
        """ "python" or "shell" for the languages that run, else None."""
        return RUN_LANGUAGES.get(self.language)

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(REPO_ROOT)}:{self.line}"


def pages() -> list[Path]:
    """README.md and every page of the site."""
    return [REPO_ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]


def blocks(page: Path) -> list[Block]:
    """The fenced blocks of ``page`` in order. A marker must be on the line right before a
    fence (a marker anywhere else, or with an unknown action, raises ValueError)."""
    lines = page.read_text().splitlines()
    found: list[Block] = []
    marker: tuple[str, str, int] | None = None
    index = 0
    while index < len(lines):
        line = lines[index]
        match_marker = _MARKER.match(line)
        if match_marker:
            action = match_marker["action"]
            if action not in ACTIONS:
                raise ValueError(f"{page}:{index + 1}: unknown docs-test action {action!r}")
            marker = (action, match_marker["argument"].strip(), index)
            index += 1
            continue
        opening = _FENCE.match(line)
        if not opening:
            if marker and line.strip():
                raise ValueError(f"{page}:{marker[2] + 1}: a docs-test marker must precede a fence")
            index += 1
            continue
        fence, indent = opening["fence"], opening["indent"]
        language = opening["info"].strip().split(" ")[0].lower() if opening["info"] else ""
        body: list[str] = []
        index += 1
        while index < len(lines) and not lines[index].strip().startswith(fence):
            text = lines[index]
            body.append(text[len(indent) :] if text.startswith(indent) else text)
            index += 1
        action, argument = (marker[0], marker[1]) if marker else ("run", "")
        if not marker and language not in RUN_LANGUAGES:
            action = "none"
        found.append(
            Block(
                page=page,
                line=index - len(body),
                language=language,
                code="\n".join(body) + "\n",
                action=action,
                argument=argument,
            )
        )
        marker = None
        index += 1
    return found
