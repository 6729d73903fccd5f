"""Two to four deliveries of the same records at once, on real threads, each cutting the records
into batches its own way (two redrives, a redrive beside the live mapping, a replaced mapping
still running, a retry after a timeout), many rounds: no record is applied twice, none is lost,
and no change of an item is applied after a newer change of it.

Each delivery is its own processor on its own HTTP client, as two Lambda invocations are; the
threads start together. The interleavings are whatever the threads and the endpoint make of them
(not steps chosen by the test): test_ledger_interleavings.py pins the known ones down.
"""

from __future__ import annotations

import random
import threading
from typing import Any

from cdc_consumer.testing import TableStream

from tests.cdc_consumer.fixtures import Resources, deliver
from tests.cdc_consumer.test_ledger_interleavings import (
    SHARD,
    applied,
    expected,
    handler,
)

ROUNDS = 12
RECORDS = 40
ITEMS = 6


def cuts(rng: random.Random, records: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The batches one delivery makes of ``records`` (in order, cut at random). Every delivery
    starts from the first record, as a shard's do: a replaced mapping and its successor both
    from TRIM_HORIZON, two redrives of one failed batch, a retry after a timeout (a delivery
    that starts later does so only once what comes before is done, which the redrive's
    holding rule and the mapping's checkpoint ensure)."""
    stretch, batches = list(records), []
    while stretch:
        size = rng.randint(1, 15)
        batches.append(stretch[:size])
        stretch = stretch[size:]
    return batches


def at_once(handlers: list[Any], deliveries: list[list[list[dict[str, Any]]]]) -> list[Any]:
    """Run each delivery's batches through its handler, on a thread each, started together;
    what they raised."""
    start, errors = threading.Barrier(len(deliveries)), []

    def run(handle: Any, batches: list[list[dict[str, Any]]]) -> None:
        try:
            start.wait()
            for batch in batches:
                deliver(handle, batch, shard_id=SHARD)
        except BaseException as error:  # reported by the caller, with the round
            errors.append(error)

    pairs = zip(handlers, deliveries, strict=True)
    threads = [threading.Thread(target=run, args=pair) for pair in pairs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    return errors


def test_concurrent_deliveries_apply_each_record_once_and_in_order(
    resources: Resources,
    ledger: str,
) -> None:
    rng = random.Random(38)
    everything: list[dict[str, Any]] = []
    stream = TableStream()  # one shard's records, round after round
    for round_number in range(ROUNDS):
        records = [
            stream.put({"pk": f"r{round_number}-k{rng.randrange(ITEMS)}", "n": n})
            for n in range(RECORDS)
        ]
        everything += records
        deliveries = [cuts(rng, records) for _ in range(rng.randint(2, 4))]
        handlers = [handler(resources, resources.endpoint.client("dynamodb")) for _ in deliveries]
        errors = at_once(handlers, deliveries)
        assert not errors, f"round {round_number}: {errors[0]!r}"
        assert applied(resources) == expected(everything), f"round {round_number}"
