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
    assert "retry_attempts: int = 5" in signature[0], signature[0]
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


# --- defaults as values, every parameter described, tables that fit (issue: the newcomer's hour)

CONSTRUCTS = [name for name in PUBLIC if name.startswith("cdc_constructs.")]
_BARE_CONSTANT = re.compile(r"=\s+([A-Z][A-Z0-9]*_[A-Z0-9_]+)\s*(?:[,)]|$)", re.M)


def _signature(entry: str) -> str:
    found = re.search(r'<div class="doc-signature.*?</code>', entry, re.S) or re.search(
        r"doc-signature.*?</code>", entry, re.S
    )
    return _text(found[0]) if found else ""


def _rows(entry: str) -> list[tuple[str, str, str]]:
    """(name, description, default) of each row of the entry's first parameter table."""
    table = re.search(r"<table>.*?</table>", entry, re.S)
    if table is None:
        return []
    rows = []
    for row in re.findall(r"<tr class=\"doc-section-item\">(.*?)</tr>", table[0], re.S):
        cells = re.findall(r"<td>(.*?)</td>", row, re.S)
        if len(cells) == 4:
            rows.append((_text(cells[0]).strip(), cells[2], _text(cells[3]).strip()))
    return rows


@pytest.mark.parametrize("name", CONSTRUCTS)
def test_defaults_show_their_values_not_the_constants_names(api: str, name: str) -> None:
    entry = _entries(api)[name]
    named = _BARE_CONSTANT.findall(_signature(entry))
    named += [default for _, _, default in _rows(entry) if _BARE_CONSTANT.match(f"= {default},")]
    assert not named, f"{name}: a default shows a constant's name, not its value: {named}"


def test_stream_consumer_and_view_backfill_show_default_values_with_their_reasons(
    api: str,
) -> None:
    entries = _entries(api)
    consumer = _signature(entries["cdc_constructs.StreamConsumer"])
    for shown in (
        "batch_size: int = 100",
        "retry_attempts: int = 5",
        "removal_policy: RemovalPolicy = RemovalPolicy.RETAIN",
        'metrics_namespace: str = "CdcConstructs"',
    ):
        assert shown in consumer, consumer
    backfill = _signature(entries["cdc_constructs.ViewBackfill"])
    assert "BACKFILL_" not in backfill, backfill
    rows = {row[0]: row for row in _rows(entries["cdc_constructs.StreamConsumer"])}
    assert rows["batch_size"][2] == "100"
    # The row links to the default's reason: its entry in the defaults module.
    assert 'href="#cdc_constructs.defaults.BATCH_SIZE"' in rows["batch_size"][1]
    reason = _entries(api)["cdc_constructs.defaults.BATCH_SIZE"]
    assert "amortize the idempotency transaction" in _text(reason)


@pytest.mark.parametrize("name", CONSTRUCTS)
def test_no_parameter_of_the_constructs_is_left_undescribed(api: str, name: str) -> None:
    undescribed = [
        row
        for row, description, _ in _rows(_entries(api)[name])
        if not _text(description).strip()
        or "See the description above" in description
        or "Not described" in description
    ]
    assert not undescribed, f"{name}: parameters without a description: {undescribed}"


def test_no_parameter_of_the_runtime_is_left_undescribed(api: str) -> None:
    """The runtime's pages too (the sinks' methods and classes, the quarantine message...):
    a row saying "Not described by its docstring yet" is a parameter its docstring forgot."""
    undescribed = [
        f"{name}({_text(row)})"
        for name, entry in _entries(api).items()
        if name.startswith("cdc_consumer")
        for row, description, _ in _rows(entry)
        if "Not described" in description
    ]
    assert not undescribed, f"runtime parameters without a description: {undescribed}"


def test_stream_consumer_describes_each_prop_from_the_docstring_that_documents_it(
    api: str,
) -> None:
    entry = _entries(api)["cdc_constructs.StreamConsumer"]
    rows = {row[0]: " ".join(_text(row[1]).split()) for row in _rows(entry)}
    assert len(rows) >= 40, sorted(rows)
    assert rows["batch_size"].startswith("records per batch, 1..10000"), rows["batch_size"]
    # filters: StreamMappingOptions' text, not ConsumerGroupMember's (also a `filters`).
    assert rows["filters"].startswith("up to 5 filter patterns"), rows["filters"]
    assert rows["scope"] == "The parent construct."


def test_parameter_tables_fit_the_page(built_site: Path, api: str) -> None:
    """Fixed column widths and wrapping cells: at 1280 px the Default column stays on the page
    (checked in Chromium, docs/writing-docs.md)."""
    assert 'href="assets/stylesheets/api.css"' in api
    css = (built_site / "assets" / "stylesheets" / "api.css").read_text()
    assert "table-layout: fixed" in css and "overflow-wrap: anywhere" in css


def test_a_default_the_description_states_is_the_default_shown(api: str) -> None:
    """A prop whose signature default is None because the construct decides it (256 MB, 60 s,
    derived from the replay windows) shows that default, not ``None``, in its row and its
    signature (docs/_ext/parameters.py, ``stated_default``)."""
    entries = _entries(api)
    rows = {row[0]: row[2] for row in _rows(entries["cdc_constructs.StreamConsumer"])}
    assert rows["memory_size"] == "256 MB" and rows["timeout"] == "60 s", rows
    assert rows["max_record_age"] == "1 h" and rows["failed_batch_retention"] == "14 days", rows
    for name in ("max_batching_window", "iterator_age_alarm_threshold", "marker_lifetime"):
        assert rows[name] != "None", (name, rows[name])
    assert rows["quarantine_queue"].startswith("a new encrypted queue"), rows
    backfill = {row[0]: row[2] for row in _rows(entries["cdc_constructs.ViewBackfill"])}
    assert backfill["timeout"] == "24 hours" and backfill["segment_timeout"] == "15 minutes"
    assert backfill["clock_skew_margin"] == "the runtime's (5 s)", backfill
    signature = _signature(entries["cdc_constructs.StreamConsumer"])
    assert "memory_size: int | None = 256 MB" in signature, signature


def test_no_reference_is_left_unresolved(api: str) -> None:
    """A constant named in a docstring links to its entry (the strict build fails otherwise:
    docs/_ext/rest_roles.py); none is left as a bare name the reader cannot look up."""
    assert "HANDLER_DOCS" not in _text(api)
