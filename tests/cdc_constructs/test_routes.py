"""A route is one module (issue 39): a source defined here, in the tests only, gets a consumer, a
redrive over its stream and the failure kinds' grants from the consumer core and the redrive
construct, with no line of the library changed; and the two routes of the library answer the
protocol as the core asks it; the checks read its mappings once its template side is
registered."""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from cdc_consumer.environment_variables import STREAM_ARN_ENV
from constructs import Construct

from cdc_constructs import StreamConsumer, StreamRedrive
from cdc_constructs.consumer_core import ConsumerCore
from cdc_constructs.consumer_options import ConsumerOptions
from cdc_constructs.exceptions import CdcConfigurationError
from cdc_constructs.failure_kinds import RedriveAccess
from cdc_constructs.monitoring_options import MonitoringOptions
from cdc_constructs.permissions import allow
from cdc_constructs.record_shape import DYNAMODB_STREAM_RECORD
from cdc_constructs.redrive import REDRIVE_HANDLER
from cdc_constructs.routes import Route, TemplateRoute, templates
from tests.cdc_constructs.nag.validation_report import rule_ids, synthesize_with_checks
from tests.cdc_constructs.support import consumer_code, grants, only, resources, with_code

TOY_ARN = "arn:aws:toy:us-east-1:123456789012:changes/orders"
TOY_READ = ("toy:ReadChanges",)
TOY_READ_BACK = ("toy:ReadRange",)


class ToyAccess(RedriveAccess):
    """Whatever a kind asks of the stream, the toy's redrive reads a range back."""

    def read_stream(self, actions: tuple[str, ...]) -> None:
        super().read_stream(TOY_READ_BACK)


@dataclass
class ToyRoute:
    """A source the library does not know: a change log with its own ARN and actions, kept
    three days."""

    stream_arn: str = TOY_ARN
    attached_to: Construct | None = None

    @property
    def source_arn(self) -> str:
        return self.stream_arn

    @property
    def retention(self) -> Duration | None:
        return Duration.days(3)

    @property
    def reads_table_stream(self) -> bool:
        return False

    def attach(self, consumer: Construct) -> None:
        self.attached_to = consumer

    def grant_read(self, function: lambda_.IFunction) -> None:
        function.add_to_role_policy(allow(TOY_READ, [self.stream_arn]))

    def mapping_added(
        self, consumer: Construct, mapping: lambda_.EventSourceMapping, options: ConsumerOptions
    ) -> None:
        pass

    def monitoring_options(self, options: ConsumerOptions) -> MonitoringOptions:
        return options.monitoring

    def add_alarms(
        self, consumer: Construct, options: ConsumerOptions, topic: sns.ITopic | None
    ) -> Mapping[str, cloudwatch.Alarm]:
        return {}

    def redrive_access(self) -> RedriveAccess:
        return ToyAccess(self.stream_arn)

    def grant_redrive(self, grantee: iam.IGrantable) -> None:
        grantee.grant_principal.add_to_principal_policy(allow(("toy:Decrypt",), ["*"]))

    def make_redrive(self, scope: Construct, construct_id: str, **props: Any) -> StreamRedrive:
        return StreamRedrive(scope, construct_id, route=self, **props)


def toy_consumer(
    stack: cdk.Stack, route: Route | None = None, construct_id: str = "Toy", **props: Any
) -> ConsumerCore:
    """A consumer of the toy source: StreamConsumer's props and defaults, checked, over it."""
    defaults = {
        name: parameter.default
        for name, parameter in inspect.signature(StreamConsumer.__init__).parameters.items()
        if parameter.kind is inspect.Parameter.KEYWORD_ONLY and name in ConsumerOptions.prop_names()
    }
    options = ConsumerOptions.from_props({**defaults, **with_code(props)})
    assert options.problems(None) == []
    return ConsumerCore(stack, construct_id, route=route or ToyRoute(), options=options)


def test_a_route_defined_outside_the_library_gets_a_consumer_and_its_redrive(
    stack: cdk.Stack,
) -> None:
    route = ToyRoute()
    consumer = toy_consumer(stack, route)
    template = cdk.assertions.Template.from_stack(stack).to_json()

    assert route.attached_to is consumer and consumer.stream_arn == TOY_ARN
    mapping = only(template, "AWS::Lambda::EventSourceMapping")
    assert mapping["EventSourceArn"] == TOY_ARN
    assert mapping["MaximumRetryAttempts"] == 5 and mapping["BisectBatchOnFunctionError"]
    found = grants(template)
    assert ("toy:ReadChanges", TOY_ARN) in found  # the consumer's
    assert ("toy:ReadRange", TOY_ARN) in found  # the redrive's, as the bucket kind asks it
    assert ("toy:Decrypt", "*") in found
    (redrive,) = [
        r["Properties"]
        for r in resources(template, "AWS::Lambda::Function").values()
        if r["Properties"]["Handler"] == REDRIVE_HANDLER
    ]
    assert redrive["Environment"]["Variables"][STREAM_ARN_ENV] == TOY_ARN
    # The source's retention is a replay window: the markers outlive it.
    assert consumer.replay_windows is not None
    assert consumer.replay_windows.stream_retention == 3 * 86400
    assert consumer.alarms and consumer.redrive is not None


def test_a_redrive_takes_a_stream_arn_or_a_route_not_both(stack: cdk.Stack) -> None:
    from cdc_constructs.exceptions import RedriveConfigurationError

    consumer = toy_consumer(stack, redrive=False)
    props = {"consumer_function": consumer.function, "consumer_name": "toy"}
    layer = consumer.function  # any: refused before it is read
    for given in ({"stream_arn": TOY_ARN, "route": ToyRoute()}, {}):
        try:
            StreamRedrive(stack, f"Redrive{len(given)}", layer=layer, **props, **given)  # type: ignore[arg-type]
        except RedriveConfigurationError as refused:
            assert "stream_arn/route" in str(refused) and "exactly one" in str(refused)
        else:
            raise AssertionError(f"{given} was not refused")


TOY_TEMPLATE = TemplateRoute(
    name="toy",
    resource_types=frozenset(),
    arn_parts=(":toy:",),
    pipe_parameters="ToyParameters",
    reads_table_stream=False,
    record_shape=DYNAMODB_STREAM_RECORD,
)


def _toy_mapping_findings() -> set[str]:
    """The rules CdcChecks reports on a bare mapping of the toy source (no destination, no
    batch item failures)."""
    app = cdk.App()
    stack = cdk.Stack(app, "Bare")
    function = lambda_.Function(stack, "Fn", runtime=lambda_.Runtime.PYTHON_3_12, **consumer_code())
    lambda_.CfnEventSourceMapping(
        stack, "Toy", function_name=function.function_name, event_source_arn=TOY_ARN
    )
    return rule_ids(synthesize_with_checks(app), "Bare/Toy")


def test_the_checks_read_a_source_from_outside_once_its_template_side_is_registered() -> None:
    assert _toy_mapping_findings() == set()  # not a route's: passed by
    templates.register(TOY_TEMPLATE)
    try:
        assert "CDC-ESM4" in _toy_mapping_findings()  # its mapping has no destination
        with pytest.raises(CdcConfigurationError, match=r"name='toy': a name no registered"):
            templates.register(TOY_TEMPLATE)
    finally:
        templates.unregister(TOY_TEMPLATE)
    assert TOY_TEMPLATE not in templates.TEMPLATE_ROUTES
