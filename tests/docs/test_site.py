"""The built site works with no network: every script, style sheet, font and image it loads is
one of its own files (no CDN: web fonts are off, diagrams are SVG rendered from Graphviz
sources, `make diagrams`, not a browser-side renderer), and each diagram is current.

Checked once in a real browser (docs/writing-docs.md: `chromium --headless --screenshot` of
the built pages with name resolution off); this test needs no browser."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

import pytest

from tests.docs.blocks import DOCS, REPO_ROOT


def _diagrams_module() -> ModuleType:
    """docs/_ext/diagrams.py (make diagrams), which is not a package of the project."""
    spec = importlib.util.spec_from_file_location("diagrams", DOCS / "_ext" / "diagrams.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_diagrams = _diagrams_module()
DIAGRAMS, source_stamp = _diagrams.DIAGRAMS, _diagrams.source_stamp

# What a page *loads* (not what it links to): scripts, style sheets, images, icons, fonts.
_LOADED = re.compile(
    r"<(?:script|img|source|iframe)\b[^>]*\bsrc=\"([^\"]+)\""
    r"|<link\b(?=[^>]*\brel=\"(?:stylesheet|preload|icon|modulepreload)\")[^>]*\bhref=\"([^\"]+)\""
)
_CSS_URL = re.compile(r"url\(\s*['\"]?([^'\")]+)|@import\s+['\"]([^'\"]+)")
_EXTERNAL = re.compile(r"^(?:[a-z]+:)?//", re.I)


def _pages(site: Path) -> list[Path]:
    """Every page, the error page (404.html) included."""
    return sorted(site.rglob("*.html"))


def test_every_page_loads_only_the_sites_own_files(built_site: Path) -> None:
    """By a relative path: an absolute one ("/assets/...") leaves the site opened from its
    files, or served under a sub-path."""
    assert (built_site / "404.html") in _pages(built_site)
    problems = []
    for page in _pages(built_site):
        text = page.read_text()
        for match in _LOADED.finditer(text):
            url = match[1] or match[2]
            if url.startswith("data:"):
                continue
            if _EXTERNAL.match(url) or url.startswith("/"):
                problems.append(f"{page.name}: loads {url}")
            elif not (page.parent / url.split("#")[0].split("?")[0]).exists():
                problems.append(f"{page.name}: loads {url}, which the site does not have")
        config = re.search(r'<script id="__config"[^>]*>(.*?)</script>', text, re.S)
        if config and re.search(r'"(?:base|search)": "(?:/|[a-z]+:)', config[1]):
            problems.append(f"{page.name}: the theme's base or search worker is absolute")
        if 'class="mermaid"' in text:
            problems.append(f"{page.name}: a Mermaid block (rendered by a script from a CDN)")
    for sheet in built_site.rglob("*.css"):
        for match in _CSS_URL.finditer(sheet.read_text()):
            if _EXTERNAL.match(match[1] or match[2]):
                problems.append(f"{sheet.name}: loads {match[1] or match[2]}")
    assert not problems, "\n".join(problems)


def test_search_index_ships_for_file_urls(built_site: Path) -> None:
    """The offline plugin: the search index is a script beside the pages, so search works
    opened from the files (file://), where a browser does not fetch JSON."""
    assert (built_site / "search" / "search_index.js").is_file()


def test_each_diagram_is_rendered_from_its_current_source() -> None:
    sources = sorted(DIAGRAMS.glob("*.dot"))
    assert sources
    for source in sources:
        svg = source.with_suffix(".svg")
        assert svg.is_file(), f"{svg.relative_to(REPO_ROOT)} missing: run make diagrams"
        assert source_stamp(source) in svg.read_text(), (
            f"{svg.relative_to(REPO_ROOT)} is not rendered from the current "
            f"{source.name}: run make diagrams"
        )


@pytest.mark.parametrize(
    ("page", "diagram"),
    [
        ("index.md", "reference-app"),
        ("constructs.md", "stream-consumer"),
        ("constructs.md", "kinesis-consumer"),
        ("constructs.md", "fan-out"),
    ],
)
def test_pages_show_what_the_constructs_deploy(page: str, diagram: str) -> None:
    assert f"(diagrams/{diagram}.svg)" in (DOCS / page).read_text()
    width = re.search(r'<svg width="(\d+)pt"', (DIAGRAMS / f"{diagram}.svg").read_text())
    assert width and int(width[1]) <= 950, (
        f"{diagram}.svg is {width and width[1]} pt wide: scaled into the page its 14 pt "
        "labels become unreadable; lay it out top to bottom or split it"
    )
