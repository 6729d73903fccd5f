"""``cdc-backfill local``: a backfill of your own app's consumer, run on this machine, start to end.

It starts the local pipeline (moto's server on 127.0.0.1, as ``cdc-local`` does) and prints its
endpoint, then:

1. with ``--seed FILE``, writes the items of FILE (JSON lines, or one JSON array; each item a
   JSON object, numbers as DynamoDB Numbers) to the backfilled table *before the consumer
   exists*: their changes are trimmed from the stream, as 24 hours would, so only the backfill
   can bring them to the view. The last item is written once the consumer runs: the consumer
   applies it and records how far it has read the stream, which the backfill's start step needs;
2. waits, at most ``--wait`` seconds, for the consumer to have applied a change (without
   ``--seed``, write one yourself to the endpoint it printed: ``AWS_ENDPOINT_URL=...``);
3. plans the backfill (the horizon, the segments: printed) and runs it, the segment code of the
   ViewBackfill in threads, while the stream keeps flowing, with a progress bar;
4. lets the stream settle and stops. The local endpoint lives as long as the command: with
   ``--keep-serving`` it stays up after the backfill (the view can be read there) until Ctrl-C.

Every step is printed on stderr; a refusal or a consumer that applies nothing within the wait is
one clear line and exit 2.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

from boto3.dynamodb.types import TypeSerializer
from cdc_consumer.backfill.shapes import BackfillPlan, BackfillRefusal
from cdc_consumer.environment_variables import BACKFILL_TABLE_ENV
from cdc_consumer.exceptions import BackfillRefusedError

from cdc_local.backfill import BackfillProgress, LocalBackfill, backfill_segment_function
from cdc_local.exceptions import LocalPipelineError
from cdc_local.runner import LocalPipeline

__all__ = ["LocalRun", "read_seed", "seed_before_the_consumer", "write_item"]

#: Seconds between two looks for the consumer's progress while waiting.
WAIT_POLL_SECONDS = 0.5

_serializer = TypeSerializer()


def read_seed(path: str | Path) -> list[dict[str, Any]]:
    """The items of a seed file: JSON lines, or one JSON array of objects (numbers exact)."""
    text = Path(path).read_text()
    try:
        stripped = text.lstrip()
        if stripped.startswith("["):
            items = json.loads(text, parse_float=Decimal)
        else:
            items = [json.loads(line, parse_float=Decimal) for line in text.splitlines() if line]
    except ValueError as error:
        raise LocalPipelineError(
            f"seed file {path} is not JSON lines nor a JSON array ({error}): give one item "
            'per line, e.g. {"pk": "item-1", "count": 3}'
        ) from None
    if not items or not all(isinstance(item, dict) for item in items):
        raise LocalPipelineError(f"seed file {path}: give at least one item, each a JSON object")
    return items


@dataclass
class LocalRun:
    """One ``cdc-backfill local`` run (see the module docstring), also usable from Python to
    look at the view afterwards (docs/backfill.md, "From Python")::

        run = LocalRun("cdk.out", "ShopStack", "OrderStats", seed=read_seed("orders.jsonl"))
        with run.pipeline() as pipeline:          # the endpoint lives inside the block
            running = run.run_to_end(pipeline)    # plan, segments, the stream read to its end
            view = pipeline.client("dynamodb").scan(TableName=pipeline.table_name("Stats"))

    :param assembly: the cloud assembly directory (``cdk.out``).
    :param stack: the stack to run.
    :param consumer: the backfilled consumer's ``consumer_name``. Default: the stack's only
        consumer with a ViewBackfill.
    :param backfill_id: the backfill's id (the same id again resumes it). Default ``"local"``.
    :param segments: parallel-scan segments. Default: the start step's, by the table's size.
    :param seed: items written before the consumer exists (:func:`read_seed`). Default none.
    :param wait_seconds: how long :meth:`plan` waits for the consumer to apply a change.
        Default 60.
    :param say: prints each step. Default ``print``.
    """

    assembly: str
    stack: str
    consumer: str | None = None
    backfill_id: str = "local"
    segments: int | None = None
    seed: list[dict[str, Any]] = field(default_factory=list)
    wait_seconds: float = 60.0
    say: Callable[[str], None] = print

    @contextmanager
    def pipeline(self) -> Iterator[LocalPipeline]:
        pipeline = LocalPipeline(self.assembly, self.stack)
        try:
            pipeline.provision()
            assert pipeline.endpoint is not None
            self.say(f"local endpoint: AWS_ENDPOINT_URL={pipeline.endpoint.url}")
            if self.seed[:-1]:
                self._seed_before(pipeline, self.seed[:-1])
            pipeline.start()
            yield pipeline
        finally:
            pipeline.close()

    def _seed_before(self, pipeline: LocalPipeline, items: list[dict[str, Any]]) -> None:
        table = _backfilled_table(pipeline, self.consumer)
        self.say(
            f"seeding {len(items)} item(s) into table {table} before the consumer exists "
            "(their changes trimmed from the stream, as 24 hours would)"
        )
        seed_before_the_consumer(pipeline, table, items)

    def plan(self, pipeline: LocalPipeline, backfill: LocalBackfill) -> BackfillPlan:
        """The start step, once the consumer has applied a change (the last seed item, or one
        of yours), waiting at most ``wait_seconds``."""
        if self.seed:
            table = backfill.settings.table
            self.say(f"writing the last seed item into {table} now that the consumer runs")
            write_item(pipeline, table, self.seed[-1])
        self.say(
            f"waiting (at most {self.wait_seconds:g} s) for consumer {backfill.settings.consumer} "
            "to apply a change"
        )
        deadline = time.monotonic() + self.wait_seconds
        while True:
            pipeline.poll()
            try:
                plan = backfill.plan(self.backfill_id, self.segments)
            except BackfillRefusedError as refused:
                if refused.refusal is not BackfillRefusal.NO_PROGRESS:
                    raise
                if time.monotonic() >= deadline:
                    raise LocalPipelineError(
                        f"consumer {backfill.settings.consumer} applied no change within "
                        f"{self.wait_seconds:g} s: write an item to table "
                        f"{backfill.settings.table} at the endpoint above (or give --seed), "
                        "or wait longer (--wait)"
                    ) from None
                time.sleep(WAIT_POLL_SECONDS)
                continue
            at = datetime.fromtimestamp(plan.horizon, UTC).isoformat()
            self.say(
                f"backfill {plan.backfill_id}: table {plan.table}, consumer {plan.consumer}, "
                f"horizon {plan.horizon} ({at}), {plan.total_segments} segment(s)"
            )
            return plan

    def run(self, pipeline: LocalPipeline, backfill: LocalBackfill, plan: BackfillPlan) -> Running:
        """The segments in a thread; the caller follows :class:`Running` and polls the stream."""
        running = Running(backfill.progress)

        def work() -> None:
            try:
                backfill.run(plan)
            except BaseException as error:  # shown as a failed backfill
                running.errors.append(error)

        running.thread = threading.Thread(target=work, name="backfill", daemon=True)
        running.thread.start()
        return running

    def run_to_end(self, pipeline: LocalPipeline, poll_seconds: float = 0.05) -> Running:
        """:meth:`plan`, :meth:`run` and :meth:`settle`, the stream flowing meanwhile: the
        backfill ended (``Running.errors`` says how) and the stream read to its end."""
        backfill = LocalBackfill(pipeline, self.consumer)
        running = self.run(pipeline, backfill, self.plan(pipeline, backfill))
        while not running.finished:
            pipeline.poll()
            time.sleep(poll_seconds)
        self.settle(pipeline, running)
        return running

    def settle(self, pipeline: LocalPipeline, running: Running) -> None:
        """The stream read to its end once the backfill ended; what happened, printed."""
        pipeline.drain()
        seen = running.progress
        outcome = "failed" if running.errors else "done"
        self.say(
            f"backfill {outcome}: {seen.items} item(s) handed over in {seen.segments_done} of "
            f"{seen.total_segments} segment(s); the stream is read to its end"
        )


@dataclass
class Running:
    """A backfill running in a thread."""

    progress: BackfillProgress
    thread: threading.Thread | None = None
    errors: list[BaseException] = field(default_factory=list)

    @property
    def finished(self) -> bool:
        return self.thread is not None and not self.thread.is_alive()


def _backfilled_table(pipeline: LocalPipeline, consumer: str | None) -> str:
    """The local name of the table the stack's (or ``consumer``'s) ViewBackfill scans, known
    from the segment function's environment once the resources exist."""
    assert pipeline.resources is not None
    spec = pipeline.stack.functions()[backfill_segment_function(pipeline, consumer)]
    return str(pipeline.resources.resolve(spec.environment[BACKFILL_TABLE_ENV]))


#: How old the seeded changes are made before the stream is trimmed of them: DynamoDB stamps a
#: change to the second, and the trim takes what is older than its retention.
SEED_AGE_SECONDS = 1.1


def seed_before_the_consumer(
    pipeline: LocalPipeline, table: str, items: list[dict[str, Any]]
) -> None:
    """Write ``items`` to ``table``, then trim the stream of their changes (as 24 hours would):
    items written before the consumer existed. Call after provision(), before start()."""
    for item in items:
        write_item(pipeline, table, item)
    time.sleep(SEED_AGE_SECONDS)
    retention = pipeline.retention.retention_seconds
    pipeline.retention.retention_seconds = 0
    try:
        pipeline.trim_streams()
    finally:
        pipeline.retention.retention_seconds = retention


def write_item(pipeline: LocalPipeline, table: str, item: dict[str, Any]) -> None:
    """Put one plain JSON item (numbers as Numbers, exactly) into a table of the endpoint."""
    pipeline.client("dynamodb").put_item(TableName=table, Item=serialized(item))


def serialized(item: dict[str, Any]) -> dict[str, Any]:
    """A plain JSON item as DynamoDB JSON (numbers as Numbers, exactly)."""
    return {name: _serializer.serialize(_numbers(value)) for name, value in item.items()}


def _numbers(value: Any) -> Any:
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return Decimal(str(value))
    if isinstance(value, dict):
        return {k: _numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_numbers(v) for v in value]
    return value
