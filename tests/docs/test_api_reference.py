"""The API reference (docs/api.md, mkdocstrings) reads like one: every public name of
`cdc_constructs` and `cdc_consumer` has an entry with its signature and, when it takes
parameters, a table of them (name, type, description, default); the docstrings' reST is
rendered, not shown (no ``:param`` or ``:class:`` text), cross-references link, and no entry
dumps its source."""

from __future__ import annotations

import html
import re
from pathlib import Path

import cdc_consumer
import pytest

import cdc_constructs

# Imported by cdc_constructs on first use (they need the nag extra): documented where they live.
NAG_NAMES = {"CdcChecks", "CdcChecksError"}
PUBLIC = [
    *(
        f"cdc_constructs.nag.{name}" if name in NAG_NAMES else f"cdc_constructs.{name}"
        for name in cdc_constructs.__all__
    ),
    *(f"cdc_consumer.{name}" for name in cdc_consumer.__all__),
]
_ENTRY = re.compile(r'(?=<h[2-4] id="(cdc_(?:constructs|consumer)[\w.]*)")')


def _entries(api: str) -> dict[str, str]:
    """Each documented object's id -> its HTML up to the next object's heading."""
    parts = _ENTRY.split(api)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts) - 1, 2)}


def _text(fragment: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", fragment))


@pytest.fixture(scope="module")
def api(built_site: Path) -> str:
    return (built_site / "api.html").read_text()


@pytest.mark.parametrize("name", PUBLIC)
def test_every_public_name_has_an_entry_with_its_signature(api: str, name: str) -> None:
    entries = _entries(api)
    assert name in entries, f"docs/api.md has no entry for {name}: add '::: {name}'"
    entry = entries[name]
    kind = re.search(r"doc-symbol-heading doc-symbol-(\w+)", entry)
    assert kind, f"{name}: no symbol heading"
    has_parameters = "doc-signature" in entry and re.search(r"\(\s*\w", _text(entry))
    if kind[1] in ("class", "function") and has_parameters:
        table = re.search(r"<table>.*?</table>", entry, re.S)
        assert table, f"{name}: its signature takes parameters but the entry has no table"
        headers = re.findall(r"<th>(.*?)</th>", table[0])
        assert headers[:4] == ["Name", "Type", "Description", "Default"], headers


def test_constructor_signatures_show_the_props_with_their_types(api: str) -> None:
    entry = _text(_entries(api)["cdc_constructs.StreamConsumer"])
    signature = re.search(r"StreamConsumer\(.*?\)\n", entry, re.S)
    assert signature, entry[:2000]
    assert "retry_attempts: int = RETRY_ATTEMPTS" in signature[0], signature[0]
    assert "table: SourceTable" in signature[0], signature[0]


def test_rest_is_rendered_not_shown(api: str) -> None:
    text = _text(api)
    shown = re.findall(
        r":(?:param|type|class|attr|meth|func|mod|exc|data|obj|returns?|raises)\b[:`]", text
    )
    assert not shown, f"reST shown literally in the API reference: {sorted(set(shown))}"
    assert "<autoref" not in api, "unresolved cross-reference tags in the built page"
    assert "Args:" not in text, "a Google-style Args: section shown as text, not as a table"


def test_no_entry_dumps_its_source(api: str) -> None:
    assert "Source code in" not in api and "doc-source" not in api


def test_cross_references_link_to_entries_on_the_page(api: str) -> None:
    ids = set(re.findall(r'id="([^"]+)"', api))
    links = re.findall(r'<a class="autorefs autorefs-internal" [^>]*href="([^"]+)"', api)
    assert len(links) > 50, f"expected the docstrings' references to link: {len(links)} links"
    broken = [href for href in links if href.startswith("#") and href[1:] not in ids]
    assert not broken, broken
    stream_consumer = _entries(api)["cdc_constructs.StreamConsumer"]
    assert 'href="#cdc_constructs.CdcConfigurationError"' in stream_consumer
