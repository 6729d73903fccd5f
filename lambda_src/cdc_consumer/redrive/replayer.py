"""Replaying records through the consumer: in order, in invocations of bounded size, retrying
the first failed record a bounded number of times; and which records of an on-failure range the
mapping's filters delivered (only those are replayed). Records of any route, each named and
filtered as its route says (:mod:`cdc_consumer.routes.replay`)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from cdc_consumer.batch_response import first_failed_index
from cdc_consumer.exceptions import InvocationError
from cdc_consumer.filter_patterns import FilterCriteria
from cdc_consumer.redrive.invokers import Invoker
from cdc_consumer.redrive.report import RedriveReport
from cdc_consumer.routes.replay import filter_view, sequence_number
from cdc_consumer.windows import SHARD_ID_KEY

__all__ = ["Replayer", "chunk_stop"]


def chunk_stop(
    records: Sequence[dict[str, Any]], start: int, max_records: int, max_bytes: int
) -> int:
    """End index of the invocation that starts at ``start``: at most ``max_records`` records and
    ``max_bytes`` of JSON, but always at least one record."""
    stop, size = start, 0
    while stop < len(records) and stop - start < max_records:
        size += len(json.dumps(records[stop])) + 2
        if size > max_bytes and stop > start:
            break
        stop += 1
    return stop


def _sequence_numbers(records: Sequence[dict[str, Any]]) -> list[str]:
    """What the consumer names each record by (its route's sequence number)."""
    return [str(sequence_number(record)) for record in records]


@dataclass
class Replayer:
    """Replays records through ``invoker`` for one run; ``replayed`` collects the sequence
    numbers of the records that succeeded (to recognise them if they are quarantined again)."""

    invoker: Invoker
    criteria: FilterCriteria
    max_attempts: int
    max_records: int
    max_bytes: int
    replayed: set[str] = field(default_factory=set)

    def delivered(
        self, records: Sequence[dict[str, Any]], report: RedriveReport
    ) -> list[dict[str, Any]]:
        """The on-failure ``records`` the mapping's filters deliver (the rest are counted as
        filtered: the mapping never delivered them, so they are not replayed)."""
        delivered = [r for r in records if self.criteria.matches(filter_view(r))]
        report.records_filtered += len(records) - len(delivered)
        return delivered

    def _invoke(self, chunk: list[dict[str, Any]], shard: str | None) -> tuple[int | None, str]:
        """The index of the chunk's first failed record (None: all succeeded), and why. The
        event names the records' ``shard`` when it is known, as a windowed mapping's does: the
        consumer then looks them up in the ledger lane they would be committed in."""
        event: dict[str, Any] = {"Records": chunk}
        if shard:
            event[SHARD_ID_KEY] = shard
        try:
            return first_failed_index(
                self.invoker.invoke(event),
                _sequence_numbers(chunk),
            )
        except InvocationError as error:
            return 0, str(error)
        except (ClientError, BotoCoreError) as error:
            return 0, f"invoking the consumer failed: {error}"

    def replay(
        self, records: Sequence[dict[str, Any]], report: RedriveReport, shard: str | None = None
    ) -> str | None:
        """Replay ``records`` (of ``shard``, when known) in order; None when all succeeded, else
        why not."""
        position, attempts = 0, 0
        while position < len(records):
            stop = chunk_stop(records, position, self.max_records, self.max_bytes)
            chunk = list(records[position:stop])
            report.invocations += 1
            failed_index, reason = self._invoke(chunk, shard)
            if failed_index is None:
                self.replayed.update(_sequence_numbers(chunk))
                report.records_replayed += len(chunk)
                position += len(chunk)
                attempts = 0
                continue
            report.records_replayed += failed_index
            self.replayed.update(_sequence_numbers(chunk[:failed_index]))
            if failed_index > 0:
                position += failed_index
                attempts = 1
            else:
                attempts += 1
            if attempts >= self.max_attempts:
                number = sequence_number(records[position])
                return (
                    f"record {number} still failed after {attempts} attempt(s): {reason};"
                    f" {position} of {len(records)} record(s) were replayed, the message is kept"
                )
        return None
