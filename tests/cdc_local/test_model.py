"""A model-based test across features: writes, updates, deletes and TTL expiries; transient
faults, crashes, crashes after commit (lost responses) and poison records; redrives from the
on-failure bucket and the quarantine on any day of the pipeline's clock, with expired markers
swept as DynamoDB's TTL would; consumer group members added, removed and reordered between
deployments, and a poison fix deployed (issue 23 §8); and the cases of the per-transaction
ledger (issue 29): a run that starts on per-record markers and upgrades to the ledger midway,
two redrives of the on-failure bucket started at once (they take turns through the consumer's
redrive lease) that cut the same records into different
transactions, records the mapping discards by age (redriven later), and a parallelization
factor of 2 to 10; and of issue 38: the mapping's tumbling window (each event names its shard,
a ledger lane per shard) turned on and off with the factor, shards rolled over, the mapping
replaced while the old one still runs (both from TRIM_HORIZON, with or without a window), and
deliveries of the same records at once on real threads (the mapping and its replacement, with
or without the bucket's redrive beside them, or each batch sent twice at once), whose requests
interleave at the endpoint as they would at DynamoDB (cdc_local.function_room).

hypothesis' ``RuleBasedStateMachine`` interleaves the steps; the model is the table's history
(every write the test made, in order). After each step that drains the pipeline or redrives:

- **nothing doubled**: no member's log (tests/cdc_local/handlers/model) holds a change twice,
  and the ``notify`` side effect ran at most once per change;
- **nothing lost**: each change of the history is in the log of ``ordered`` and ``stats``, or
  still pending in the on-failure bucket (or, for ``stats``, in the quarantine); ``audit`` has
  every change written and drained while it was deployed;
- **nothing out of order**: the changes the stream delivered are applied in stream order per
  item, and a redrive never applies a change of an item while an earlier change of that item
  stays pending where it was before the run (the bucket or the quarantine; a change the
  consumer quarantines during the run is set aside and holds nothing, docs/design.md §5); a
  delivery from the stream's start beside the mapping may apply a change pending in the bucket
  or the quarantine before or after it (late, as a redriven one) in any order, and every other
  in stream order;
- and once everything is redriven with the fix deployed, each log *is* the item's history
  (the view equals its recomputation) and ``notify`` ran exactly once per change.

``make test`` runs a few examples (``MODEL_EXAMPLES``, default 4, of ``MODEL_STEPS`` 12 steps);
``make model-test`` runs many more.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_lambda as lambda_
from cdc_consumer.defaults import ID_ATTRIBUTE
from cdc_consumer.environment_variables import (
    CONSUMER_GROUP_ENV,
    IDEMPOTENCY_TABLE_ENV,
    LEDGER_TABLE_ENV,
)
from cdc_consumer.group_member_spec import GroupMemberSpec
from cdc_consumer.ledger import SORT_ATTRIBUTE
from cdc_consumer.legacy_markers import SINCE_ATTRIBUTE, SINCE_SORT_KEY
from cdc_consumer.redrive import CallableInvoker, Redrive, RedriveReport, Source
from cdc_consumer.redrive_shapes import ON_FAILURE_S3_PREFIX
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    precondition,
    rule,
    run_state_machine_as_test,
)

from cdc_constructs import ChangeCaptureTable, ConsumerGroupMember, StreamConsumer
from cdc_local.accounting import (
    ConsumerWiring,
    on_failure_batches,
    peek_messages,
    scan,
)
from cdc_local.endpoint import LocalEndpoint
from cdc_local.faults import FaultPlan
from cdc_local.runner import LocalPipeline
from cdc_local.ttl import TtlAnnotatedStreams

HANDLER = Path(__file__).parent / "handlers" / "model"
PK = dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING)
DAY = 24 * 3600
ITEMS = ("a", "b", "c")
KINDS = ("put", "put", "poison", "expiring", "delete")
CHANGES = st.lists(
    st.tuples(st.sampled_from(ITEMS), st.sampled_from(KINDS)), min_size=2, max_size=8
)
#: Faults of a drain, the crash more often (it exhausts retries: batches go to the bucket).
FAULTS = ("transient", "crash", "crash", "lost_response", "duplicate", "none")
MEMBERS = ("ordered", "stats", "audit")
#: Members every deployment has (``audit`` comes and goes).
ALWAYS = ("ordered", "stats")
#: Examples ``make test`` runs; ``make model-test`` sets more.
EXAMPLES = int(os.environ.get("MODEL_EXAMPLES", "4"))
STEPS = int(os.environ.get("MODEL_STEPS", "12"))
#: How far the pipeline's clock may go: up to the retention of the failed-batch bucket and the
#: quarantine (14 days by default), past the 7 days markers were kept before issue 23 §1
#: (markers now outlive every replay window: a redrive on day 8 or 13 must not apply twice).
MAX_DAYS = 13
#: The model stack's tumbling window (StreamConsumer's default).
WINDOW_SECONDS = 900
#: Concurrent deliveries of the same records (:meth:`PipelineModel.concurrent_deliveries`).
DELIVERIES = ("replaced", "redrive", "retry")
SHRINK = os.environ.get("MODEL_SHRINK") == "1"


@pytest.fixture(scope="module")
def model_assembly(tmp_path_factory: pytest.TempPathFactory) -> Path:
    outdir = tmp_path_factory.mktemp("model.out")
    app = cdk.App(outdir=str(outdir))
    stack = cdk.Stack(app, "Model")
    table = ChangeCaptureTable(
        stack, "Orders", partition_key=PK, time_to_live_attribute="expiresAt"
    )
    view = dynamodb.TableV2(stack, "View", partition_key=PK)
    consumer = StreamConsumer(
        stack,
        "Consumers",
        table=table,
        consumer_name="model",
        members=[ConsumerGroupMember(name) for name in MEMBERS],
        code=lambda_.Code.from_asset(str(HANDLER)),
        handler="index.handler",
        batch_size=4,
        retry_attempts=1,
        monitoring=False,
        redrive=False,
    )
    consumer.grant_view_table(view, env_var="VIEW_TABLE")
    app.synth()
    return outdir


@dataclass(frozen=True)
class Change:
    """One change of the model's history: the item and its log entry (see the handler's
    ``entry``)."""

    pk: str
    entry: str


def order_of(entry: str) -> tuple[int, int]:
    """Log entries of one item in the order of its changes: write ``w``, then its deletion."""
    return (int(entry[:-1]), 1) if entry.endswith("D") else (int(entry), 0)


def entry_of(record: dict[str, Any]) -> tuple[str, str]:
    """(pk, log entry) of a stream record as Lambda delivers it."""
    stream = record["dynamodb"]
    pk = stream["Keys"]["pk"]["S"]
    if record["eventName"] == "REMOVE":
        return pk, f"{int(stream['OldImage']['w']['N'])}D"
    return pk, str(int(stream["NewImage"]["w"]["N"]))


@dataclass
class Deployment:
    """A period during which one set of members ran (for ``audit``'s expectations)."""

    members: tuple[str, ...]
    first_change: int
    #: changes drained by the mapping while this deployment ran (index into the history)
    drained_to: int = 0


@dataclass
class Observed:
    """The logs and side-effect calls read from the view table."""

    logs: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    #: ``notify``'s calls per change (pk, entry)
    calls: dict[tuple[str, str], int] = field(default_factory=dict)


class ModelState(RuleBasedStateMachine):
    """The pipeline, the model's history (every write the test made, in order) and what is
    read of them; see the module docstring."""

    endpoint: LocalEndpoint
    assembly: Path

    def __init__(self) -> None:
        super().__init__()
        self.offset = 0.0
        self.pipeline = LocalPipeline(
            self.assembly,
            "Model",
            endpoint=self.endpoint,
            faults=FaultPlan(),
            clock=lambda: time.time() + self.offset,
            flush_windows=True,
        ).start()
        self.wiring = ConsumerWiring.of(self.pipeline, "index.handler")
        self.ddb = self.pipeline.client("dynamodb")
        self.view_table = self.wiring.function.environment["VIEW_TABLE"]
        self.ledger_table = self.wiring.function.environment[LEDGER_TABLE_ENV]
        self.on_ledger = True
        self.history: list[Change] = []
        self.items: dict[str, int | None] = dict.fromkeys(ITEMS)
        self.writes = 0
        self.fixed = False
        self.deployments = [Deployment(MEMBERS, 0)]
        #: the highest change the stream applied per (member, item): stream order check
        self.stream_high: dict[tuple[str, str], tuple[int, int]] = {}
        self.observed = Observed()
        self.steps = 0
        #: Changes whose side effect a crash or a transient error may have cut between the
        #: call and its claim's completion: it may run again (at least once, as documented in
        #: cdc_consumer.claims). Every other change's runs exactly once.
        self.exposed: set[tuple[str, str]] = set()
        #: The wirings of mappings replaced since (their failed batches stay under their UUID).
        self.retired: list[ConsumerWiring] = []

    def teardown(self) -> None:
        self.pipeline.close()

    def _write(self, pk: str, *, poison: bool = False, ttl_seconds: int | None = None) -> None:
        self.writes += 1
        item: dict[str, Any] = {"pk": {"S": pk}, "w": {"N": str(self.writes)}}
        if poison:
            item["poison"] = {"BOOL": True}
        if ttl_seconds is not None:
            expires = int(time.time() + self.offset) + ttl_seconds
            item["expiresAt"] = {"N": str(expires)}
        self.ddb.put_item(TableName=self.wiring.source_table, Item=item)
        self.items[pk] = self.writes
        self.history.append(Change(pk, str(self.writes)))

    def _redeploy(self, change: Any) -> None:
        """A new deployment of the function: ``change(environment)``, then a cold start."""
        function = self.wiring.function
        environment = dict(function.environment)
        change(environment)
        function.environment = environment
        function._handler, function._modules = None, {}  # a cold start of the new code
        self.wiring = ConsumerWiring.of(self.pipeline, "index.handler")

    def _faults(self, fault: str, seed: int) -> Any:
        if fault in ("transient", "crash"):
            self.exposed |= {
                (change.pk, change.entry)
                for change in self.history
                if not self.observed.calls.get((change.pk, change.entry))
            }
        plan = {
            "none": FaultPlan(),
            "transient": FaultPlan(seed=seed, transient_error_probability=0.3),
            "crash": FaultPlan(seed=seed, crash_probability=0.3),
            "lost_response": FaultPlan(seed=seed, lost_response_probability=0.5),
            "duplicate": FaultPlan(seed=seed, duplicate_delivery_probability=0.5),
        }[fault]
        return _plan(self.pipeline, plan)

    def _read(self) -> Observed:
        observed = Observed()
        for item in scan(self.ddb, self.view_table):
            member, _, rest = item["pk"]["S"].partition("#")
            if member == "notify":
                pk, _, entry = rest.partition("#")
                observed.calls[(pk, entry)] = int(item["calls"]["N"])
            else:
                observed.logs[(member, rest)] = [e["S"] for e in item["log"]["L"]]
        return observed

    def _sweep(self) -> list[tuple[str, int]]:
        """The TTL sweep; the source items it deleted, as (pk, last write)."""
        source = {
            item["pk"]["S"]: int(item["w"]["N"])
            for item in scan(self.ddb, self.wiring.source_table)
        }
        self.pipeline.sweep_ttl()
        left = {item["pk"]["S"] for item in scan(self.ddb, self.wiring.source_table)}
        return [(pk, w) for pk, w in sorted(source.items()) if pk not in left]

    def _pending(self) -> set[tuple[str, str]]:
        """The changes held in the bucket or the quarantine."""
        return self._bucket_pending() | self._quarantine_pending()

    def _waiting(self) -> tuple[set[tuple[str, str]], int]:
        """The changes held in the bucket or the quarantine, and how many objects and messages
        hold them (a round that only removes a duplicate object made progress too)."""
        objects = sum(
            len(on_failure_batches(self.pipeline, wiring))
            for wiring in [*self.retired, self.wiring]
        )
        messages = peek_messages(self.pipeline.client("sqs"), self.wiring.quarantine_queue_url)
        return self._pending(), objects + len(messages)

    def _pending_by_source(self) -> tuple[set[tuple[str, str]], set[tuple[str, str]]]:
        """The changes held in the bucket, and those held in the quarantine."""
        return self._bucket_pending(), self._quarantine_pending()

    def _bucket_pending(self) -> set[tuple[str, str]]:
        pending = set()
        for wiring in [*self.retired, self.wiring]:
            for document in on_failure_batches(self.pipeline, wiring):
                payload = document["payload"]  # the batch's event, as JSON text
                batch = json.loads(payload) if isinstance(payload, str) else payload
                pending |= {entry_of(record) for record in batch["Records"]}
        return pending

    def _quarantine_pending(self) -> set[tuple[str, str]]:
        messages = peek_messages(self.pipeline.client("sqs"), self.wiring.quarantine_queue_url)
        return {entry_of(message["record"]) for message in messages}


class ModelChecks(ModelState):
    """The checks after each step that drains or redrives (the module docstring's invariants)."""

    def _check(self, before: Observed, after: Observed, order: Any) -> None:
        self.observed = after
        order(before, after)
        self._nothing_doubled()
        self._nothing_lost()

    def _nothing_doubled(self) -> None:
        for (member, pk), log in self.observed.logs.items():
            assert len(log) == len(set(log)), f"{member} applied a change of {pk} twice: {log}"
        doubled = {
            change: n
            for change, n in self.observed.calls.items()
            if n != 1 and change not in self.exposed
        }
        assert not doubled, f"notify ran more than once: {doubled}"

    def _nothing_lost(self) -> None:
        current = self.deployments[-1]
        pending = self._pending()
        for member in ALWAYS:
            for change in self.history[: current.drained_to]:
                applied = change.entry in self.observed.logs.get((member, change.pk), [])
                held = (change.pk, change.entry) in pending
                assert applied or held, f"{member} lost {change} (history {self.history})"
        if "audit" in current.members:
            for change in self.history[current.first_change : current.drained_to]:
                applied = change.entry in self.observed.logs.get(("audit", change.pk), [])
                assert applied or (change.pk, change.entry) in pending, f"audit lost {change}"

    def _appended(self, before: Observed, after: Observed) -> Iterator[tuple[str, str, list[str]]]:
        for (member, pk), log in after.logs.items():
            earlier = before.logs.get((member, pk), [])
            assert log[: len(earlier)] == earlier, f"{member}'s log of {pk} was rewritten"
            if len(log) > len(earlier):
                yield member, pk, log[len(earlier) :]

    def _check_stream_order(self, before: Observed, after: Observed) -> None:
        """What a drain applied (the mapping delivers in stream order; a redelivery only
        repeats), per member and item: newer than what the stream applied before."""
        for member, pk, new in self._appended(before, after):
            orders = [order_of(entry) for entry in new]
            assert orders == sorted(orders), f"{member} applied {pk}'s changes {new} out of order"
            high = self.stream_high.get((member, pk))
            assert high is None or orders[0] > high, (
                f"{member} applied {pk}'s change {new[0]} after a newer one from the stream"
            )
            self.stream_high[(member, pk)] = orders[-1]

    def _replay_order(self, waiting: tuple[set[tuple[str, str]], set[tuple[str, str]]]) -> Any:
        """The order check of deliveries that replay the stream from its start (a replacement
        from TRIM_HORIZON) beside the mapping, or the bucket beside them, with ``waiting``
        pending before (in the bucket, in the quarantine): a change pending before or after
        comes late, as a redriven one does, in any order (one delivery gave it up to the bucket
        or the quarantine and went on with later changes of its item, another applied it); so
        does, for a member added to the group later (``audit``), a change made before it joined,
        which the replay gives it for the first time (docs/design.md §5, markers); every
        other change is applied in stream order after what the stream applied before."""

        def check(before: Observed, after: Observed) -> None:
            late = waiting[0] | waiting[1] | self._pending()
            for member, pk, new in self._appended(before, after):
                older = {(c.pk, c.entry) for c in self.history[: self._joined(member)]}
                fresh = [order_of(e) for e in new if (pk, e) not in late and (pk, e) not in older]
                assert fresh == sorted(fresh), f"{member} applied {pk}'s changes {new} out of order"
                high = self.stream_high.get((member, pk))
                assert not fresh or high is None or fresh[0] > high, (
                    f"{member} applied {pk}'s change(s) {new} after a newer one from the stream"
                )
                if fresh:
                    self.stream_high[(member, pk)] = fresh[-1]

        return check

    def _joined(self, member: str) -> int:
        """Where in the history ``member`` last joined the group (0: a member from the start)."""
        since: int | None = 0
        for deployment in self.deployments:
            if member not in deployment.members:
                since = None
            elif since is None:
                since = deployment.first_change
        return since or 0

    def _redrive_order(self, waiting: tuple[set[tuple[str, str]], set[tuple[str, str]]]) -> Any:
        """The order check of a redrive that started with ``waiting`` pending (in the bucket, in
        the quarantine): it applies an item's changes in order, and none while an earlier change
        of that item that the member has not applied stays where it was pending before the run
        (a quarantined change that a replayed object also held was delivered by the run).
        A change the consumer quarantines during the run (poison by its own judgement: from the
        bucket into the quarantine) is set aside as the running consumer sets it aside and holds
        nothing (docs/design.md §5); the redrive reports it as re-quarantined."""
        bucket, quarantine = waiting
        bucket_after = self._bucket_pending()
        # A quarantined change that is also a record of an object the run replayed (the object
        # left the bucket) was delivered by the run itself: applied, or quarantined again
        # (set aside, as above). It no longer waits where it was (docs/design.md §5).
        replayed = bucket - bucket_after
        stayed = (bucket & bucket_after) | ((quarantine - replayed) & self._quarantine_pending())

        def check(before: Observed, after: Observed) -> None:
            for member, pk, new in self._appended(before, after):
                orders = [order_of(entry) for entry in new]
                assert orders == sorted(orders), f"a redrive applied {pk}'s {new} out of order"
                log = after.logs[(member, pk)]
                held = sorted(
                    order_of(entry) for key, entry in stayed if key == pk and entry not in log
                )
                assert not held or held[0] > orders[-1], (
                    f"a redrive applied {member}'s {pk} change(s) {new} while an earlier one "
                    f"stays pending: {held}"
                )

        return check


class StreamRules(ModelChecks):
    """The steps of a running pipeline: writes, drains with faults, shards rolled over, days
    passing, redrives, deployments of the consumer group, and the settling at the end."""

    @initialize(
        changes=CHANGES,
        fault=st.sampled_from(FAULTS),
        seed=st.integers(0, 2**16),
        ledger=st.booleans(),
    )
    def start(self, changes: list[tuple[str, str]], fault: str, seed: int, ledger: bool) -> None:
        """A first workload, drained with a fault: every example starts with history. Without
        ``ledger`` the consumer starts on per-record markers (an older stack), until
        :meth:`upgrade` gives it its ledger table."""
        self.on_ledger = ledger
        if not ledger:
            self._redeploy(lambda env: env.pop(LEDGER_TABLE_ENV, None))
        self.write(changes)
        self.drain(fault, seed)

    @rule(changes=CHANGES)
    def write(self, changes: list[tuple[str, str]]) -> None:
        """Writes to the table: a put, a put ``stats`` finds poison (until the fix is
        deployed), a put of an item that expires within the hour (swept when the clock passes
        it), or a delete."""
        self.steps += 1
        for pk, kind in changes:
            if kind != "delete":
                poison = kind == "poison" and not self.fixed
                self._write(pk, poison=poison, ttl_seconds=3600 if kind == "expiring" else None)
                continue
            last = self.items[pk]
            if last is None:
                continue
            self.ddb.delete_item(TableName=self.wiring.source_table, Key={"pk": {"S": pk}})
            self.items[pk] = None
            self.history.append(Change(pk, f"{last}D"))

    @rule(
        fault=st.sampled_from(
            ["transient", "crash", "crash", "lost_response", "duplicate", "none"]
        ),
        seed=st.integers(0, 2**16),
    )
    def drain(self, fault: str, seed: int) -> None:
        """Drain the streams with one kind of fault injected (often enough to exhaust retries
        and send batches to the on-failure bucket)."""
        self.steps += 1
        before = self._read()
        with self._faults(fault, seed):
            self.pipeline.drain()
        self.deployments[-1].drained_to = len(self.history)
        self._check(before, self._read(), self._check_stream_order)

    @rule(changes=CHANGES)
    def age_out(self, changes: list[tuple[str, str]]) -> None:
        """Writes the mapping never delivers: two hours pass first (its maximum record age is
        one), so it discards them unseen to the on-failure bucket; a redrive applies them."""
        self.write(changes)
        if self.offset + 2 * 3600 <= MAX_DAYS * DAY:
            self.offset += 2 * 3600
        before = self._read()
        self.pipeline.drain()
        self.deployments[-1].drained_to = len(self.history)
        self._check(before, self._read(), self._check_stream_order)

    @rule()
    def roll_shards(self) -> None:
        """DynamoDB closes the stream's shard and opens a child (about every 4 hours), maybe
        while a batch of the parent is failing or unread: Lambda reads the parent first."""
        self.steps += 1
        self.pipeline.roll_shards()

    @rule(days=st.sampled_from([1, 3, 8]))
    def days_pass(self, days: int) -> None:
        """The clock moves on (after the streams are drained, so no record ages out unread):
        the TTL sweeper deletes expired items (REMOVE records the next drain delivers) and
        expired markers, and the streams trim what is older than 24 hours."""
        self.steps += 1
        self.pipeline.drain()
        self.deployments[-1].drained_to = len(self.history)
        self.observed = self._read()
        if self.offset + days * DAY > MAX_DAYS * DAY:
            return
        self.offset += days * DAY
        self.pipeline.trim_streams()
        swept = self._sweep()
        for pk, last in swept:
            self.items[pk] = None
            self.history.append(Change(pk, f"{last}D"))

    @rule(fault=st.sampled_from(["none", "transient", "crash"]), seed=st.integers(0, 2**16))
    def redrive_bucket(self, fault: str, seed: int) -> None:
        self.steps += 1
        before, waiting = self._read(), self._pending_by_source()
        with self._faults(fault, seed):
            redrive_bucket(self.pipeline, self.wiring)
        self._check(before, self._read(), self._redrive_order(waiting))

    @precondition(lambda self: self.fixed)
    @rule()
    def redrive_quarantine(self) -> None:
        self.steps += 1
        before, waiting = self._read(), self._pending_by_source()
        redriver(self.pipeline, self.wiring).run(
            self.wiring.quarantine_queue_url, Source.QUARANTINE
        )
        self._check(before, self._read(), self._redrive_order(waiting))

    @rule(
        add_audit=st.booleans(),
        reverse=st.booleans(),
        fix=st.booleans(),
    )
    def deploy(self, add_audit: bool, reverse: bool, fix: bool) -> None:
        """A new deployment: ``audit`` added or removed, the members' order changed, maybe the
        poison fix; the function cold-starts with the new environment."""
        self.steps += 1
        self.pipeline.drain()
        self.deployments[-1].drained_to = len(self.history)
        self.observed = self._read()
        members = [*ALWAYS, *(["audit"] if add_audit else [])]
        if reverse:
            members.reverse()
        function = self.wiring.function
        environment = dict(function.environment)
        environment[CONSUMER_GROUP_ENV] = GroupMemberSpec.encode(
            [GroupMemberSpec(name) for name in members]
        )
        if fix:
            environment["POISON_FIXED"] = "1"
            self.fixed = True
        function.environment = environment
        function._handler, function._modules = None, {}  # a cold start of the new code
        self.wiring = ConsumerWiring.of(self.pipeline, "index.handler")
        self.deployments.append(Deployment(tuple(members), len(self.history)))

    @precondition(lambda self: self.steps >= STEPS // 2)
    @rule()
    def settle(self) -> None:
        """Everything redriven with the fix deployed, no faults: each member's log is its
        item's history, and ``notify`` ran exactly once per change."""
        if not self.fixed:
            self.deploy(add_audit="audit" in self.deployments[-1].members, reverse=False, fix=True)
        # Each source's run replays what the other no longer holds back; a held object stalls
        # its shard's later ones, whichever mapping wrote them, so it may take several rounds,
        # each making progress (the redrive function is invoked again until it is ok).
        left = self._waiting()
        for _ in range(10):
            self.redrive_bucket("none", 0)
            self.redrive_quarantine()
            before, left = left, self._waiting()
            if not left[0] or left == before:
                break
        self.drain("none", 0)
        assert not self._bucket_pending() and not self._quarantine_pending()
        expected: dict[str, list[str]] = defaultdict(list)
        for change in self.history:
            expected[change.pk].append(change.entry)
        for member in ALWAYS:
            logs = {pk: self.observed.logs.get((member, pk), []) for pk in expected}
            # Redriven changes come late (the stream moved on): the same changes, each once.
            assert {pk: sorted(log, key=order_of) for pk, log in logs.items()} == dict(expected)
        changes = {(change.pk, change.entry) for change in self.history}
        assert set(self.observed.calls) == changes, "notify did not run for every change"


class PipelineModel(StreamRules):
    """The local pipeline against its model: the steps that change how it runs (the ledger
    upgrade, the parallelization factor and window, a replaced mapping) and the concurrent
    deliveries of the same records; see the module docstring."""

    @precondition(lambda self: not self.on_ledger)
    @rule()
    def upgrade(self) -> None:
        """The stack that ran with per-record markers gets its ledger table (an upgrade in
        place): old markers still count while they can matter."""
        self.steps += 1
        self.pipeline.drain()
        self.deployments[-1].drained_to = len(self.history)
        self.observed = self._read()
        self.on_ledger = True
        self._redeploy(lambda env: env.__setitem__(LEDGER_TABLE_ENV, self.ledger_table))
        # The ledger takes over now on the stream's clock, which the model runs days ahead of
        # the function's (time.time): a record created before it, applied with a marker, is
        # looked up in the markers, as on AWS where both clocks agree (cdc_consumer.legacy_markers).
        for member in MEMBERS:
            self.ddb.put_item(
                TableName=self.ledger_table,
                Item={
                    ID_ATTRIBUTE: {"S": member},
                    SORT_ATTRIBUTE: {"S": SINCE_SORT_KEY},
                    SINCE_ATTRIBUTE: {"N": str(int(self.pipeline.clock()))},
                },
                ConditionExpression="attribute_not_exists(#id)",
                ExpressionAttributeNames={"#id": ID_ATTRIBUTE},
            )

    @rule(factor=st.sampled_from([1, 2, 3, 5, 10]), window=st.booleans())
    def parallelize(self, factor: int, window: bool) -> None:
        """The mapping's parallelization factor changes (lanes of one shard interleave), and
        with it its tumbling window: on or off at a factor of 1 (``tumbling_window``), off above
        it (AWS refuses one there). With a window each event names its shard and the runtime
        keeps a ledger lane per shard; without, per-record markers; the records listed in the
        lanes before stay applied. The function is redeployed as CloudFormation would."""
        self.steps += 1
        self.pipeline.drain()
        self.deployments[-1].drained_to = len(self.history)
        self.observed = self._read()
        mapping = self.wiring.mapping
        seconds = WINDOW_SECONDS if factor == 1 and window else 0
        mapping.settings = replace(
            mapping.settings, parallelization_factor=factor, tumbling_window_seconds=seconds
        )
        self._redeploy(lambda env: None)

    @rule(window=st.booleans(), fault=st.sampled_from(["none", "crash", "duplicate"]))
    def replace_mapping(self, window: bool, fault: str) -> None:
        """CloudFormation replaces the mapping: the new one (with or without a window) reads the
        stream from TRIM_HORIZON while the old one still runs, both delivering the same records
        (the new one from the start), then the old one is deleted. Its failed batches stay under
        its own UUID in the bucket, which the redrives replay too."""
        self.steps += 1
        before, waiting = self._read(), self._pending_by_source()
        old = self.wiring
        name = old.mapping.name.split("~")[0]
        seconds = WINDOW_SECONDS if window else 0
        self.pipeline.replace_mapping(
            name, parallelization_factor=1, tumbling_window_seconds=seconds
        )
        with self._faults(fault, 0):
            self.pipeline.drain()
        self.pipeline.retire_mapping(old.mapping.name)
        self.retired.append(old)
        self.wiring = ConsumerWiring.of(self.pipeline, "index.handler")
        self.deployments[-1].drained_to = len(self.history)
        self._check(before, self._read(), self._replay_order(waiting))

    @rule()
    def concurrent_redrives(self) -> None:
        """Two redrives of the on-failure bucket started at once, one invoking the consumer
        with each batch whole, the other with each batch in two halves: the same records cut
        into different transactions. They do not overlap: one takes the consumer's lease, the
        other waits for it (a redrive reading the quarantine hides its messages from any other
        reader, docs/design.md §5). Each replays every mapping's batches in one run (a replaced
        mapping's stay under its UUID), as the redrive function does. Nothing applies twice, no
        item's change goes ahead of an earlier pending one, and the waiting one runs once the
        holder finished (neither ends busy)."""
        self.steps += 1
        before, waiting = self._read(), self._pending_by_source()
        reports: list[RedriveReport] = []
        at_once(
            *(
                lambda split=split: reports.append(
                    redrive_bucket(self.pipeline, self.wiring, split=split, wait=600)
                )
                for split in (False, True)
            )
        )
        assert all(report.busy is None for report in reports), "a redrive ended busy"
        self._check(before, self._read(), self._redrive_order(waiting))

    @rule(
        kind=st.sampled_from(DELIVERIES),
        window=st.booleans(),
        fault=st.sampled_from(["none", "crash", "duplicate"]),
        changes=CHANGES,
    )
    def concurrent_deliveries(
        self, kind: str, window: bool, fault: str, changes: list[tuple[str, str]]
    ) -> None:
        """Deliveries of the same shard's records at once, each on its own thread (their
        requests interleave at the endpoint, which serializes each as DynamoDB isolates it;
        the function's invocations run side by side, cdc_local.function_room), after new
        writes: ``replaced``, the mapping and its replacement (from TRIM_HORIZON, with or
        without a window) drain at the same moment, then the old one is retired;
        ``redrive``, the same with a redrive of the on-failure bucket on a third thread (the
        replacement delivers the bucket's records again); ``retry``, the mapping drains with
        each batch sent three times at once, cut three ways (:class:`_Resent`: a bisected
        retry while earlier attempts still run). Nothing applies twice or is lost, and no
        item's change is applied after a newer one."""
        self.write(changes)
        before, waiting, old = self._read(), self._pending_by_source(), self.wiring
        with self._faults(fault, 0):
            if kind == "retry":
                order = self._check_stream_order
                old.mapping.function = _Resent(old.function)  # type: ignore[assignment]
                try:
                    old.mapping.drain(flush_windows=True)
                finally:
                    old.mapping.function = old.function
            else:
                order = self._replay_order(waiting)
                at_once(*self._replaced_at_once(window, redrive=kind == "redrive"))
            self.pipeline.drain()  # what is left, and the handlers' output
        if kind != "retry":
            self.pipeline.retire_mapping(old.mapping.name)
            self.retired.append(old)
            self.wiring = ConsumerWiring.of(self.pipeline, "index.handler")
        self.deployments[-1].drained_to = len(self.history)
        self._check(before, self._read(), order)

    def _replaced_at_once(self, window: bool, *, redrive: bool) -> list[Callable[[], object]]:
        """Jobs for :func:`at_once`: the mapping and its replacement (made here) draining, and
        with ``redrive`` the on-failure bucket's redrive of every mapping's batches."""
        old = self.wiring
        seconds = WINDOW_SECONDS if window else 0
        new = self.pipeline.replace_mapping(
            old.mapping.name.split("~")[0],
            parallelization_factor=1,
            tumbling_window_seconds=seconds,
        )
        jobs: list[Callable[[], object]] = [
            lambda: old.mapping.drain(flush_windows=True),
            lambda: new.drain(flush_windows=True),
        ]
        if redrive:
            jobs.append(lambda: redrive_bucket(self.pipeline, old))
        return jobs


def redriver(
    pipeline: LocalPipeline, wiring: ConsumerWiring, *, split: bool = False, wait: float = 0.0
) -> Redrive:
    """A redrive of the consumer through its handler contract that knows both of its sources,
    the quarantine queue and the on-failure bucket, and takes the consumer's lease in its
    idempotency table, as the redrive function does (so neither source replays a change of an
    item while the other holds an earlier one, and no other redrive hides one). ``split``: each
    batch is handed to the consumer in two invocations (its first half, then the rest);
    ``wait``: seconds to wait for the lease when another redrive holds it."""
    handler = wiring.function.as_handler()
    return Redrive(
        invoker=CallableInvoker(
            handler=_in_halves(handler) if split else handler, function_name=wiring.function.name
        ),
        stream_arn=wiring.mapping.stream_arn,
        sqs_client=pipeline.client("sqs"),
        streams_client=TtlAnnotatedStreams(
            pipeline.client("dynamodbstreams"), pipeline.ttl_ledger, wiring.mapping.stream_arn
        ),
        consumer_name=wiring.consumer_name,
        member_names=[spec.name for spec in wiring.members],
        receive_wait_seconds=0,
        s3_client=pipeline.client("s3"),
        function_name=wiring.function.name,
        quarantine_queue_url=wiring.quarantine_queue_url,
        on_failure_bucket=wiring.on_failure_bucket,
        on_failure_prefix=wiring.on_failure_prefix,
        lease_table=wiring.function.environment[IDEMPOTENCY_TABLE_ENV],
        dynamodb_client=pipeline.client("dynamodb"),
        lease_wait_seconds=wait,
        lease_poll_seconds=0.05,
    )


def redrive_bucket(
    pipeline: LocalPipeline, wiring: ConsumerWiring, *, split: bool = False, wait: float = 0.0
) -> RedriveReport:
    """The on-failure bucket's redrive through ``wiring``'s consumer (see :func:`redriver`) as
    the redrive function runs it: at the root of Lambda's layout, the batches of every mapping
    of the function (a replaced mapping's stay under its UUID) in one run."""
    assert wiring.on_failure_bucket is not None
    redrive = redriver(pipeline, wiring, split=split, wait=wait)
    return redrive.run_bucket(wiring.on_failure_bucket, ON_FAILURE_S3_PREFIX)


def at_once(*jobs: Callable[[], object]) -> None:
    """Run each of ``jobs`` on its own thread, started together; re-raise the first error."""
    start, errors = threading.Barrier(len(jobs)), []

    def run(job: Callable[[], object]) -> None:
        try:
            start.wait()
            job()
        except BaseException as error:  # re-raised below, in the test's thread
            errors.append(error)

    threads = [threading.Thread(target=run, args=(job,)) for job in jobs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]


class _Resent:
    """A mapping's function whose every batch is sent three times at once, each on its own
    thread and cut its own way: whole, record by record, and in two halves, the attempt the
    mapping goes on with (a retry that bisected the batch, sent while earlier attempts it gave
    up on still run: the same records in other transactions). Its result: the first half's
    when it reports a failure, else the second's."""

    def __init__(self, function: Any) -> None:
        self.function = function

    def invoke(self, event: dict[str, Any]) -> Any:
        records = event["Records"]
        if not records:  # a tumbling window's final invocation: sent once
            return self.function.invoke(event)
        others = [
            threading.Thread(target=self._in_pieces, args=(event, pieces))
            for pieces in ([records], [[record] for record in records])
        ]
        for other in others:
            other.start()
        try:
            half = max(1, len(records) // 2)
            return self._in_pieces(event, [records[:half], records[half:]])
        finally:
            for other in others:
                other.join()

    def _in_pieces(self, event: dict[str, Any], pieces: list[list[Any]]) -> Any:
        """Invoke with each of ``pieces`` in turn, up to the first that fails."""
        result = None
        for piece in (piece for piece in pieces if piece):
            result = self.function.invoke({**event, "Records": piece})
            if result.failed or (result.response or {}).get("batchItemFailures"):
                break
        return result

    def __getattr__(self, name: str) -> Any:
        return getattr(self.function, name)


def _in_halves(handler: Any) -> Any:
    """``handler`` invoked with each event's first half of records, then (if that half had no
    failure) with the rest; the response of the last invocation."""

    def halves(event: dict[str, Any], context: Any) -> Any:
        records = event.get("Records") or []
        half = max(1, len(records) // 2)
        response: Any = {"batchItemFailures": []}
        for part in (records[:half], records[half:]):
            if not part:
                continue
            response = handler({**event, "Records": part}, context)
            if (response or {}).get("batchItemFailures"):
                return response
        return response

    return halves


class _plan:
    """Inject ``plan``'s faults inside the block (none outside)."""

    def __init__(self, pipeline: LocalPipeline, plan: FaultPlan) -> None:
        self.faults, self.plan = pipeline.faults, plan

    def __enter__(self) -> None:
        assert self.faults is not None
        self.faults.plan = self.plan
        self.faults._random.seed(self.plan.seed)

    def __exit__(self, *exc: object) -> None:
        assert self.faults is not None
        self.faults.plan = FaultPlan()


def _machine(aws: LocalEndpoint, model_assembly: Path) -> type[PipelineModel]:
    """The state machine on the test endpoint (reset before each example)."""
    reset = getattr(aws, "reset", None)

    class Machine(PipelineModel):
        endpoint = aws
        assembly = model_assembly

        def __init__(self) -> None:
            if reset is not None:
                reset()
            super().__init__()

    return Machine


def test_a_change_quarantined_by_a_redrive_holds_nothing(
    aws: LocalEndpoint, model_assembly: Path
) -> None:
    """The long model run's example 15, reduced: a crashing drain sends ``b``'s changes 3, 4,
    poison 5 and 6 to the bucket; the bucket's redrive (before the fix) has ``stats`` apply 3
    and 4, quarantine 5 and apply 6, as the running consumer does. 5 was pending in the bucket,
    not in the quarantine, before the run: set aside by the consumer, it holds nothing."""
    machine = _machine(aws, model_assembly)()
    try:
        changes = [("c", "poison"), ("c", "put"), ("b", "put"), ("b", "put")]
        machine.start([*changes, ("b", "poison"), ("b", "put")], "crash", 3846, False)
        assert {("b", "5"), ("b", "6")} <= machine._bucket_pending()
        assert not machine._quarantine_pending()
        machine.redrive_bucket("none", 0)
        assert machine.observed.logs[("stats", "b")] == ["3", "4", "6"]
        assert ("b", "5") in machine._quarantine_pending()
    finally:
        machine.teardown()


def test_an_object_holding_a_quarantined_change_itself_is_replayed_once_the_fix_is_in(
    aws: LocalEndpoint, model_assembly: Path
) -> None:
    """The long model run's second find (200 examples of 25 steps), its settle step: ``c``'s
    poison change was quarantined by a delivery of a batch that then failed whole into the
    bucket. The object waited for the quarantine's copy of its own record, and that copy for
    the object's earlier change: nothing was ever replayed. Now the object goes (applying
    the change itself), and everything settles."""
    state = _machine(aws, model_assembly)()
    try:
        changes = [("c", "poison"), ("c", "poison"), ("b", "expiring"), ("c", "put")]
        state.start([*changes, ("a", "poison"), ("a", "poison")], "transient", 4906, False)
        state.days_pass(days=3)
        state.redrive_bucket(fault="transient", seed=882)
        first = [("a", "expiring"), ("c", "poison"), ("c", "put"), ("a", "poison")]
        state.age_out([*first, ("c", "put"), ("b", "put"), ("c", "delete"), ("a", "delete")])
        state.roll_shards()
        state.upgrade()
        state.drain(fault="lost_response", seed=1266)
        state.redrive_bucket(fault="none", seed=10385)
        second = [("a", "put"), ("b", "expiring"), ("c", "put"), ("c", "poison")]
        state.age_out([*second, ("a", "expiring"), ("c", "delete"), ("c", "put"), ("a", "poison")])
        state.parallelize(factor=1, window=True)
        state.drain(fault="none", seed=882)
        state.concurrent_redrives()
        state.deploy(add_audit=True, fix=True, reverse=True)
        state.write([("b", "put"), ("a", "poison")])
        state.redrive_bucket(fault="transient", seed=783)
        state.concurrent_redrives()
        state.roll_shards()
        state.redrive_quarantine()
        third = [("c", "delete"), ("b", "expiring"), ("c", "put"), ("c", "poison")]
        state.age_out([*third, ("a", "expiring"), ("c", "delete"), ("c", "put"), ("a", "poison")])
        state.settle()
    finally:
        state.teardown()


def test_a_quarantined_change_waits_for_a_replaced_mappings_earlier_batch(
    aws: LocalEndpoint, model_assembly: Path
) -> None:
    """The long model run's third find, reduced: ``a``'s changes 2 and 3 age out into the
    bucket under the first mapping's UUID, the stream trims them, ``a``'s poison change 4 is
    quarantined, and CloudFormation replaces the mapping (the new one quarantines 4 again).
    With the fix deployed, the quarantine
    redrive holds 4 while 2 and 3 wait under the retired mapping's UUID (it looked only under
    the new one's and applied 4 first); the bucket's redrive then applies 2 and 3, and 4
    follows."""
    machine = _machine(aws, model_assembly)()
    try:
        machine.start([("b", "put")], "none", 0, True)
        machine.age_out([("a", "put"), ("a", "put")])
        machine.days_pass(days=1)
        machine.write([("a", "poison")])
        machine.drain("none", 0)
        machine.replace_mapping(window=True, fault="none")
        assert ("a", "4") in machine._quarantine_pending()
        machine.deploy(add_audit=False, reverse=False, fix=True)
        machine.redrive_quarantine()
        assert "4" not in machine.observed.logs.get(("stats", "a"), [])
        machine.redrive_bucket("none", 0)
        machine.redrive_quarantine()
        assert machine.observed.logs[("stats", "a")] == ["2", "3", "4"]
    finally:
        machine.teardown()


def test_two_redrives_at_once_keep_an_items_order(aws: LocalEndpoint, model_assembly: Path) -> None:
    """The long model run's failure, reduced: ``b``'s poison change 3 is in the quarantine and
    its change 4 in the bucket. One redrive of the bucket holds 4; two at once must too (the
    first one's look into the quarantine hid 3 from the second, which applied 4 ahead of 3),
    and nothing applies twice. Once the lease holder finished, the second runs; with the fix
    deployed, the quarantine and then the bucket apply 3 and then 4."""
    machine = _machine(aws, model_assembly)()
    try:
        changes = [("a", "put"), ("b", "put"), ("a", "delete"), ("b", "poison"), ("b", "put")]
        machine.start(
            [*changes, ("a", "expiring"), ("a", "expiring"), ("b", "put")], "crash", 2, False
        )
        assert ("b", "3") in machine._quarantine_pending()
        assert ("b", "4") in machine._bucket_pending()
        machine.concurrent_redrives()
        assert "4" not in machine.observed.logs.get(("stats", "b"), [])
        machine.deploy(add_audit=True, reverse=False, fix=True)
        machine.redrive_quarantine()
        machine.redrive_bucket("none", 0)
        assert machine.observed.logs[("stats", "b")][-2:] == ["3", "4"]
    finally:
        machine.teardown()


def test_concurrent_deliveries_of_the_same_records_on_threads(
    aws: LocalEndpoint, model_assembly: Path
) -> None:
    """Each kind of concurrent delivery once, after a crashing drain left batches in the
    bucket: a twice-sent batch, a replacement beside the mapping, and the bucket's redrive
    beside both; then everything settles, each change applied once."""
    machine = _machine(aws, model_assembly)()
    try:
        changes = [("a", "put"), ("b", "put"), ("a", "put"), ("b", "poison"), ("c", "put")]
        machine.start([*changes, ("a", "delete"), ("b", "put")], "crash", 7, True)
        machine.concurrent_deliveries("retry", True, "none", [("a", "put"), ("b", "put")])
        machine.concurrent_deliveries("replaced", False, "duplicate", [("c", "put")] * 3)
        machine.concurrent_deliveries("redrive", True, "none", [("a", "put"), ("c", "delete")])
        machine.settle()
    finally:
        machine.teardown()


def test_model(aws: LocalEndpoint, model_assembly: Path) -> None:
    """The state machine over the local pipeline (see the module docstring)."""
    run_state_machine_as_test(
        _machine(aws, model_assembly),
        settings=settings(
            max_examples=EXAMPLES,
            stateful_step_count=STEPS,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            derandomize=True,
            database=None,
            # Shrinking a failure of this machine takes many minutes: on with MODEL_SHRINK=1.
            phases=[p for p in Phase if p is not Phase.shrink or SHRINK],
        ),
    )
