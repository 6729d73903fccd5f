"""A stream record as the event a fan-out pipe puts on its bus, and PutEvents in bounded calls.

A fan-out pipe (``StreamFanOut``, ``OutboxPublisher``) turns each stream record into one
PutEvents entry: ``Source`` and ``Resources`` are fixed, ``DetailType`` is fixed or a JSON path
into the record, and ``Detail`` is the pipe's input template with each ``<$.path>`` replaced by
the record's value there (a string without its quotes, which the template writes; any other
value as JSON). Without a template, Pipes sends the record itself as the detail.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cdc_consumer.exceptions import RedriveError
from cdc_consumer.redrive.defaults import DEFAULT_PUT_ATTEMPTS

__all__ = ["EventShape", "PutEventsOutcome", "TemplateError", "put_events"]

#: PutEvents accepts at most 10 entries per call (the API's limit).
MAX_ENTRIES_PER_CALL = 10
#: PutEvents accepts at most 256 KB per call, entries' sizes summed as EventBridge counts them.
MAX_BYTES_PER_CALL = 256 * 1024

_PLACEHOLDER = re.compile(r"<\$((?:\.[A-Za-z0-9_-]+)*)>")


class TemplateError(RedriveError):
    """A record lacks a value the pipe's input template or detail-type path reads."""


def _at(record: Mapping[str, Any], path: str) -> Any:
    """The value at ``$.a.b`` (``path`` is ``.a.b``) of ``record``; TemplateError if absent."""
    value: Any = record
    for name in path.split(".")[1:]:
        if not isinstance(value, Mapping) or name not in value:
            raise TemplateError(
                f"record {record.get('dynamodb', {}).get('SequenceNumber')} has no value at"
                f" $.{path[1:]}; the pipe's template or detail-type reads it"
            )
        value = value[name]
    return value


@dataclass(frozen=True)
class EventShape:
    """What a pipe's target parameters make of a record (``EventBridgeEventBusParameters`` and
    ``InputTemplate`` of the pipe's ``TargetParameters``)."""

    event_bus_name: str
    source: str
    detail_type: str
    input_template: str | None = None
    resources: tuple[str, ...] = ()

    def detail(self, record: Mapping[str, Any]) -> str:
        """The event's detail, as Pipes renders it from ``record``."""
        if self.input_template is None:
            return json.dumps(record)

        def value(match: re.Match[str]) -> str:
            found = _at(record, match.group(1)) if match.group(1) else record
            return json.dumps(found)[1:-1] if isinstance(found, str) else json.dumps(found)

        text = _PLACEHOLDER.sub(value, self.input_template)
        try:
            return json.dumps(json.loads(text))
        except ValueError as error:
            raise TemplateError(
                f"the input template renders to no JSON for record"
                f" {record.get('dynamodb', {}).get('SequenceNumber')} ({error}): {text[:120]!r}"
            ) from None

    def entry(self, record: Mapping[str, Any]) -> dict[str, Any]:
        """The PutEvents entry the pipe would send for ``record``."""
        detail_type = self.detail_type
        if detail_type.startswith("$."):
            detail_type = str(_at(record, detail_type[1:]))
        entry: dict[str, Any] = {
            "EventBusName": self.event_bus_name,
            "Source": self.source,
            "DetailType": detail_type,
            "Detail": self.detail(record),
        }
        if self.resources:
            entry["Resources"] = list(self.resources)
        return entry


def entry_size(entry: Mapping[str, Any]) -> int:
    """An entry's size as EventBridge counts it against the 256 KB of a call."""
    size = 14 if entry.get("Time") else 0
    size += sum(len(str(entry.get(name, "")).encode()) for name in ("Source", "DetailType"))
    size += len(entry["Detail"].encode())
    return size + sum(len(r.encode()) for r in entry.get("Resources", ()))


def _calls(entries: Sequence[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """``entries`` in order, in calls of at most 10 entries and 256 KB."""
    calls: list[list[dict[str, Any]]] = []
    size = 0
    for entry in entries:
        if (
            not calls
            or len(calls[-1]) >= MAX_ENTRIES_PER_CALL
            or (size + entry_size(entry) > MAX_BYTES_PER_CALL)
        ):
            calls.append([])
            size = 0
        calls[-1].append(entry)
        size += entry_size(entry)
    return calls


@dataclass
class PutEventsOutcome:
    """What delivering a message's entries did."""

    delivered: int = 0
    calls: int = 0
    #: ``FailedEntryCount`` of the last round: entries still not delivered.
    failed_entry_count: int = 0
    #: ``ErrorCode: ErrorMessage`` of the entries still not delivered.
    errors: list[str] = field(default_factory=list)


def put_events(
    events_client: Any,
    entries: Sequence[dict[str, Any]],
    *,
    attempts: int = DEFAULT_PUT_ATTEMPTS,
    sleep: Callable[[float], None] = time.sleep,
) -> PutEventsOutcome:
    """Put ``entries`` on their bus in calls of at most 10 entries and 256 KB, resending the
    entries a call failed (``FailedEntryCount``) up to ``attempts`` rounds with backoff."""
    outcome = PutEventsOutcome()
    too_big = [e for e in entries if entry_size(e) > MAX_BYTES_PER_CALL]
    if too_big:
        outcome.failed_entry_count = len(too_big)
        outcome.errors = [f"an entry is {entry_size(too_big[0])} bytes; PutEvents takes 262144"]
        return outcome
    pending = list(entries)
    for attempt in range(attempts):
        if attempt:
            sleep(0.2 * 2**attempt)
        failed: list[tuple[dict[str, Any], str]] = []
        for call in _calls(pending):
            response = events_client.put_events(Entries=call)
            outcome.calls += 1
            for sent, result in zip(call, response["Entries"], strict=True):
                if result.get("ErrorCode"):
                    failed.append((sent, f"{result['ErrorCode']}: {result.get('ErrorMessage')}"))
            outcome.delivered += len(call) - response.get("FailedEntryCount", 0)
        pending = [sent for sent, _ in failed]
        outcome.failed_entry_count = len(failed)
        outcome.errors = [error for _, error in failed]
        if not pending:
            break
    return outcome
