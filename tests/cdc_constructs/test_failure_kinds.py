"""A failure kind is one module (issue 30): a kind defined outside the package, registered by
lookup, gets its grants, its redrive variable, its replay window and its alarm into a consumer
without a line changed elsewhere; and no module outside ``cdc_constructs/failure_kinds/``
names a kind (its module, aws-cdk-lib's destination class, or the variable it sets)."""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import jsii
import pytest
from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from cdc_consumer.replay_windows import ReplayWindows, minimum_marker_lifetime
from cdc_consumer.service_limits import STREAM_RETENTION_SECONDS
from constructs import Construct

from cdc_constructs import (
    ChangeCaptureTable,
    KinesisConsumer,
    KinesisDestination,
    StreamConsumer,
    failure_kinds,
)
from cdc_constructs.consumer_core import ConsumerCore
from cdc_constructs.exceptions import Problem
from cdc_constructs.failure_kinds import OnFailureTarget, RedriveAccess, RedriveSource
from cdc_constructs.permissions import allow
from cdc_constructs.redrive import REDRIVE_HANDLER
from tests import structure
from tests.cdc_constructs.support import grants, only, resources, with_code
from tests.cdc_constructs.test_on_failure import PK
from tests.cdc_constructs.test_routes import ToyRoute, toy_consumer

ARCHIVE_ARN = "arn:aws:s3:::failure-archive"
ARCHIVE_DAYS = 20


@jsii.implements(lambda_.IEventSourceDlq)
class ArchiveDestination:
    """A destination of a kind the library does not know."""

    def bind(
        self, _target: lambda_.IEventSourceMapping, _handler: lambda_.IFunction
    ) -> lambda_.DlqDestinationConfig:
        return lambda_.DlqDestinationConfig(destination=ARCHIVE_ARN)


class ArchiveKind:
    name = "archive"
    destination_type: type = ArchiveDestination
    keeps_records = True
    cfn_type = "Custom::Archive"
    age_checked_by_redrive = False
    redrive_source: RedriveSource | None = None

    def arn_retention(self, arn: str) -> int | None:
        return ARCHIVE_DAYS * 86400

    def age_metric(
        self, target: OnFailureTarget, consumer_name: str, namespace: str
    ) -> tuple[str, cloudwatch.IMetric, str] | None:
        metric = cloudwatch.Metric(namespace="Archive", metric_name="OldestAge")
        return "ArchiveAge", metric, "the archive deletes it"

    def reference(self, scope: Construct, arn: str, key_arns: tuple[str, ...]) -> OnFailureTarget:
        return OnFailureTarget(self, arn, key_arns)

    def grant_put(self, target: OnFailureTarget, grantee: iam.IGrantable) -> None:
        grantee.grant_principal.add_to_principal_policy(
            allow(["s3:PutObject"], [f"{target.arn}/archive/*"])
        )

    def grant_redrive(self, target: OnFailureTarget, access: RedriveAccess) -> None:
        access.add(
            lambda grantee: grantee.grant_principal.add_to_principal_policy(
                allow(["s3:GetObject"], [f"{target.arn}/archive/*"])
            )
        )

    def redrive_environment(self, target: OnFailureTarget) -> dict[str, str]:
        return {"ARCHIVE_ARN": target.arn}

    def retention(
        self, consumer: Construct, target: OnFailureTarget
    ) -> tuple[int | None, list[Problem]]:
        return ARCHIVE_DAYS * 86400, []

    def template_retention(self, properties: Mapping[str, Any]) -> int | None:
        return ARCHIVE_DAYS * 86400

    def alarm_metrics(
        self, target: OnFailureTarget, period: Duration, consumer_name: str
    ) -> dict[str, tuple[cloudwatch.IMetric, str]]:
        metric = cloudwatch.Metric(namespace="Archive", metric_name="Waiting", period=period)
        return {"ArchiveWaiting": (metric, f"{consumer_name}: batches wait in the archive")}


@pytest.fixture
def archive_kind() -> Iterator[ArchiveKind]:
    kind = ArchiveKind()
    failure_kinds.register(kind)
    yield kind
    failure_kinds.unregister(kind)


ARCHIVE_LAYER = "arn:aws:lambda:us-east-1:123456789012:layer:archive-failures:1"


def _stream_consumer(stack: cdk.Stack, **props: Any) -> ConsumerCore:
    table = ChangeCaptureTable(stack, "Orders", partition_key=PK)
    return StreamConsumer(stack, "Consumer", table=table, **with_code(props))


def _kinesis_consumer(stack: cdk.Stack, **props: Any) -> ConsumerCore:
    table = ChangeCaptureTable(stack, "Orders", partition_key=PK, kinesis=KinesisDestination())
    return KinesisConsumer(stack, "Consumer", table=table, **with_code(props))


def _toy_consumer(stack: cdk.Stack, **props: Any) -> ConsumerCore:
    return toy_consumer(stack, construct_id="Consumer", **props)


#: Each route's consumer, and its windows besides the kind's: (stream retention, record age).
#: The toy route is defined in the tests only (tests/cdc_constructs/test_routes.py).
ROUTES = {
    "dynamodb-stream": (_stream_consumer, (STREAM_RETENTION_SECONDS, 3600)),
    "kinesis": (_kinesis_consumer, (7 * 86400, 6 * 86400)),
    "toy": (_toy_consumer, (3 * 86400, 3600)),
}


TOY_LAYER = "arn:aws:lambda:us-east-1:123456789012:layer:toy-route:1"


def test_a_route_and_a_kind_from_outside_both_reach_the_redrive_function(
    stack: cdk.Stack, archive_kind: ArchiveKind
) -> None:
    """A route defined outside the library (its ``redrive_source``) and a kind defined outside
    it: the redrive function gets both layers and imports both modules, neither overwriting
    the other."""
    layers = {
        name: lambda_.LayerVersion.from_layer_version_arn(stack, name, arn)
        for name, arn in (("Archive", ARCHIVE_LAYER), ("Toy", TOY_LAYER))
    }
    archive_kind.redrive_source = RedriveSource("archive_failures", layers["Archive"])
    route = ToyRoute()
    route.redrive_source = RedriveSource("toy_plugin", layers["Toy"])  # type: ignore[attr-defined]
    toy_consumer(stack, route=route, construct_id="Consumer", on_failure=ArchiveDestination())
    template = cdk.assertions.Template.from_stack(stack).to_json()

    (redrive,) = [
        r["Properties"]
        for r in resources(template, "AWS::Lambda::Function").values()
        if r["Properties"]["Handler"] == REDRIVE_HANDLER
    ]
    modules = redrive["Environment"]["Variables"]["CDC_REDRIVE_SOURCE_MODULES"]
    assert sorted(modules.split(",")) == ["archive_failures", "toy_plugin"]
    assert ARCHIVE_LAYER in redrive["Layers"] and TOY_LAYER in redrive["Layers"]


@pytest.mark.parametrize("route", sorted(ROUTES))
def test_a_kind_defined_outside_the_package_is_one_module(
    stack: cdk.Stack, archive_kind: ArchiveKind, route: str
) -> None:
    """The kind reaches the consumer and the redrive of every route, a route defined outside
    the library too, through the one path (the consumer core and the redrive construct): a
    route that named a kind of its own (a bucket, a queue) would miss this one."""
    layer = lambda_.LayerVersion.from_layer_version_arn(stack, "ArchiveLayer", ARCHIVE_LAYER)
    archive_kind.redrive_source = RedriveSource("archive_failures", layer)
    make, (stream_retention, record_age) = ROUTES[route]
    consumer = make(stack, on_failure=ArchiveDestination())
    template = cdk.assertions.Template.from_stack(stack).to_json()

    assert consumer.on_failure.kind == "archive"
    assert consumer.on_failure_bucket is None and consumer.dead_letter_queue is None
    found = grants(template)
    assert ("s3:PutObject", f"{ARCHIVE_ARN}/archive/*") in found  # the consumer's
    assert ("s3:GetObject", f"{ARCHIVE_ARN}/archive/*") in found  # the redrive's
    (redrive,) = [
        r["Properties"]
        for r in resources(template, "AWS::Lambda::Function").values()
        if r["Properties"]["Handler"] == REDRIVE_HANDLER
    ]
    assert redrive["Environment"]["Variables"]["ARCHIVE_ARN"] == ARCHIVE_ARN
    # Deployed, the redrive finds the kind's redrive side: its layer, and the module to import.
    assert redrive["Environment"]["Variables"]["CDC_REDRIVE_SOURCE_MODULES"] == "archive_failures"
    assert ARCHIVE_LAYER in redrive["Layers"]
    # Its window counts: the markers outlive what it keeps.
    windows = consumer.replay_windows
    assert windows is not None and windows.failed_batch_retention == ARCHIVE_DAYS * 86400
    expected = ReplayWindows(
        stream_retention=stream_retention,
        max_record_age=record_age,
        failed_batch_retention=ARCHIVE_DAYS * 86400,
        quarantine_retention=14 * 86400,
    )
    assert consumer.marker_lifetime.to_seconds() == minimum_marker_lifetime(expected)
    # Its alarm is the consumer's.
    assert "ArchiveWaiting" in consumer.alarms
    alarm = only(
        {"Resources": {k: v for k, v in template["Resources"].items() if "ArchiveWaiting" in k}},
        "AWS::CloudWatch::Alarm",
    )
    assert alarm["AlarmDescription"] == "Consumer: batches wait in the archive"


@pytest.mark.parametrize("route", sorted(ROUTES))
def test_a_kind_from_outside_without_its_redrive_side_is_refused_on_every_route(
    stack: cdk.Stack, archive_kind: ArchiveKind, route: str
) -> None:
    from cdc_constructs.exceptions import RedriveConfigurationError

    make, _ = ROUTES[route]
    with pytest.raises(RedriveConfigurationError, match="redrive_source=RedriveSource"):
        make(stack, on_failure=ArchiveDestination())


def test_a_kind_from_outside_without_its_redrive_side_is_refused_naming_what_is_missing(
    stack: cdk.Stack, archive_kind: ArchiveKind
) -> None:
    """The deployed redrive function runs the runtime layer's handler: without the kind's
    redrive side it would fail on every run, so synthesis refuses it and says what to give."""
    from cdc_constructs.exceptions import RedriveConfigurationError

    table = ChangeCaptureTable(stack, "Orders", partition_key=PK)
    with pytest.raises(RedriveConfigurationError) as refused:
        StreamConsumer(
            stack, "Consumer", table=table, **with_code({"on_failure": ArchiveDestination()})
        )
    message = str(refused.value)
    assert "'archive'" in message and "redrive_source=RedriveSource(module=" in message
    assert "cdc-redrive --source-module" in message


def test_a_kind_from_outside_the_redrive_does_not_read_needs_no_redrive_side(
    stack: cdk.Stack, archive_kind: ArchiveKind
) -> None:
    table = ChangeCaptureTable(stack, "Orders", partition_key=PK)
    StreamConsumer(
        stack,
        "Consumer",
        table=table,
        **with_code({"on_failure": ArchiveDestination(), "redrive": False}),
    )


def test_checks_read_a_kinds_window_of_a_destination_given_by_arn(
    tmp_path: Path, archive_kind: ArchiveKind
) -> None:
    """CDC-ESM9 asks the kind for the window of a destination the template names only by ARN
    (it failed: "the on-failure bucket ... is not in this template")."""
    from tests.cdc_constructs.nag.test_rules import (
        REPLAY_WINDOWS_SECONDS,
        Shared,
        destination,
        function,
        iterator_age_alarm,
        mapping,
    )
    from tests.cdc_constructs.nag.validation_report import synthesize_with_checks

    app = cdk.App(outdir=str(tmp_path))
    scope = cdk.Stack(app, "Archived")
    shared = Shared(scope, "Shared")
    fn = function(scope, "Function")
    fn.add_environment("CDC_CONSUMER_NAME", "stats")
    fn.add_environment("CDC_MARKER_TTL_SECONDS", str(REPLAY_WINDOWS_SECONDS))
    iterator_age_alarm(scope, "Alarm", fn)
    archive = "arn:aws:archive:us-east-1:123456789012:store/failures"
    mapping(scope, shared, fn=fn, destination_config=destination(archive))
    findings = synthesize_with_checks(app)
    assert [f for f in findings if f.rule_id == "CDC-ESM9"] == []


def test_an_unregistered_kind_is_refused_naming_the_known_ones(stack: cdk.Stack) -> None:
    from tests.cdc_constructs.support import consumer_error

    error = consumer_error(stack, on_failure=ArchiveDestination())
    assert "SqsDlq, SnsDlq or S3OnFailureDestination" in str(error)


PACKAGE = Path(__file__).resolve().parents[2] / "cdc_constructs"
KIND_MODULES = {"bucket", "queue", "topic", "quarantine"}
#: What names one kind: aws-cdk-lib's destination classes and the variables a kind sets.
KIND_NAMES = {
    "S3OnFailureDestination",
    "SqsDlq",
    "SnsDlq",
    "ON_FAILURE_BUCKET_ENV",
    "ON_FAILURE_QUEUE_ENV",
    "BUCKET",
    "QUEUE",
    "TOPIC",
}


def _named(tree: ast.Module) -> Iterator[str]:
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            for kind in KIND_MODULES:
                if node.module == f"cdc_constructs.failure_kinds.{kind}":
                    yield node.module
            yield from (alias.name for alias in node.names if alias.name in KIND_NAMES)
        elif isinstance(node, ast.Name | ast.Attribute):
            name = node.id if isinstance(node, ast.Name) else node.attr
            if name in KIND_NAMES:
                yield name


def test_no_module_outside_the_kinds_names_a_kind() -> None:
    """The lookup (``failure_kinds/__init__``) and the kinds' own modules may; nothing else:
    adding a kind must not mean touching the constructs that use them."""
    modules = structure.modules(PACKAGE)
    named = {
        f"{module}: {name}"
        for module, tree in modules.items()
        if not module.startswith("cdc_constructs.failure_kinds")
        for name in _named(tree)
    }
    assert named == set()


def test_the_check_sees_a_module_that_names_a_kind() -> None:
    tree = ast.parse(
        "from cdc_constructs.failure_kinds.queue import QUEUE\n"
        "from aws_cdk.aws_lambda_event_sources import SqsDlq\n"
        "def f(x: Any) -> bool:\n    return isinstance(x, SqsDlq)\n"
    )
    assert set(_named(tree)) == {"cdc_constructs.failure_kinds.queue", "QUEUE", "SqsDlq"}


def test_checks_read_a_kinds_window_from_any_template_by_its_type(
    archive_kind: ArchiveKind,
) -> None:
    """CdcChecks (cdc_constructs.nag.marker_windows) finds the kind by the destination's
    resource type or ARN, and the kind reads its own window."""
    bucket = failure_kinds.kind_of_template("AWS::S3::Bucket")
    lifecycle = {"Rules": [{"Status": "Enabled", "ExpirationInDays": 20}]}
    assert bucket is not None
    assert bucket.template_retention({"LifecycleConfiguration": lifecycle}) == 20 * 86400
    queue = failure_kinds.kind_of_arn("arn:aws:sqs:eu-west-1:111111111111:dlq")
    assert queue is not None and queue.template_retention({}) == 0
    assert failure_kinds.kind_of_template("Custom::Archive") is archive_kind
    assert failure_kinds.kind_of_template("AWS::DynamoDB::Table") is None
