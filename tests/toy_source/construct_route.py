"""The toy change log as a consumer's construct route: the toy route of
tests/cdc_constructs/test_routes.py over a log table of the app, its reads granted on that
table, and its ``redrive_source``: StreamRedrive gives the redrive function the toy's layer
and names its plugin (which registers the redrive's toy route) in CDC_REDRIVE_SOURCE_MODULES."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from cdc_constructs import StreamRedrive
from cdc_constructs.failure_kinds import RedriveAccess, RedriveSource
from cdc_constructs.permissions import allow
from tests.cdc_constructs.test_routes import ToyRoute

LAYER = Path(__file__).parent / "layer"
#: What reads the log, locally and in the redrive (the toy's GetRecords is a Query).
READ = ("dynamodb:Query",)


def log_arn(table_name: str, log: str) -> str:
    """The toy ARN of the log ``log`` kept in the table ``table_name``."""
    return f"arn:aws:toy:us-east-1:123456789012:log/{table_name}/{log}"


class LogAccess(RedriveAccess):
    """The redrive reads the log back from its table (``stream_arn``: the table's ARN),
    whatever a kind asks of the stream."""

    def read_stream(self, actions: tuple[str, ...]) -> None:
        super().read_stream(READ)


@dataclass
class ToyLogRoute(ToyRoute):
    """A consumer's source: the log ``stream_arn`` names, kept in ``table``."""

    table: dynamodb.ITable | None = None
    layer: lambda_.ILayerVersion | None = None

    def grant_read(self, function: lambda_.IFunction) -> None:
        assert self.table is not None
        function.add_to_role_policy(allow(READ, [self.table.table_arn]))

    def redrive_access(self) -> RedriveAccess:
        assert self.table is not None
        return LogAccess(self.table.table_arn)

    def grant_redrive(self, grantee: iam.IGrantable) -> None:
        pass

    @property
    def redrive_source(self) -> RedriveSource:
        """The plugin the redrive function imports (registering the toy's replay route)."""
        assert self.layer is not None
        return RedriveSource("toy_plugin", self.layer)

    def make_redrive(self, scope: Construct, construct_id: str, **props: Any) -> StreamRedrive:
        return StreamRedrive(scope, construct_id, route=self, **props)
