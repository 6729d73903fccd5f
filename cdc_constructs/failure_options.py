"""What happens to records a consumer fails on: the on-failure destination, the quarantine
queue, the idempotency table that makes retries safe, and the redrive that replays them."""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sqs as sqs

from cdc_constructs import defaults
from cdc_constructs.exceptions import Problem
from cdc_constructs.failure_kinds import check_failed_batch_retention
from cdc_constructs.idempotency_table import IdempotencyTable
from cdc_constructs.on_failure import check_on_failure
from cdc_constructs.redrive import reserve_seconds
from cdc_constructs.validation import check_flag, check_function_timeout, check_removal_policy

__all__ = ["FailureHandlingOptions"]


@dataclass(frozen=True)
class FailureHandlingOptions:
    """The consumer's failure-handling props.

    :param on_failure: the mapping's on-failure destination, one of aws-cdk-lib's
        ``S3OnFailureDestination(bucket)``, ``SqsDlq(queue)`` or ``SnsDlq(topic)``, each granted
        least privilege (S3: ``s3:PutObject`` on its objects and ``s3:ListBucket``, plus
        ``kms:GenerateDataKey`` on its key; SQS: ``sqs:SendMessage``; SNS: ``sns:Publish``).
        Default: a :class:`~cdc_constructs.on_failure.FailedBatchBucket` (encrypted, TLS-only,
        public access blocked, versioned, retained, lifecycle ``failed_batch_retention``). S3
        keeps each failed batch whole, so a redrive replays it even after the stream trimmed its
        records (24 h); SQS and SNS keep only a pointer into the stream.
    :param on_failure_queue: an existing queue as the on-failure destination: the same as
        ``on_failure=SqsDlq(queue)`` (kept for existing apps; see CHANGELOG.md).
    :param failed_batch_retention: how long the default bucket keeps a failed batch (and a
        redriven one, as a noncurrent version). Default 14 days; less is refused.
    :param quarantine_queue: an existing queue for poison records (the whole record and its
        error). Default: a new encrypted queue, 14 days retention.
    :param encryption_key: a customer KMS key for the queues made here. Default:
        SQS-managed encryption.
    :param idempotency_table: an :class:`IdempotencyTable` or ITable (pk ``id``, TTL
        ``expiration``). Default: a new IdempotencyTable; share one between consumers.
    :param marker_lifetime: how long the runtime keeps processed-markers and side-effect
        claims (``CDC_MARKER_TTL_SECONDS``). Default: derived from this consumer's replay
        windows (stream retention, maximum record age, the failed-batch bucket's lifecycle, the
        quarantine queue's retention, plus a day; :mod:`~cdc_constructs.marker_lifetime`), since
        a record replayed after its marker expired is applied again. Longer costs storage only;
        shorter than the derived minimum is refused.
    :param removal_policy: what ``cdk destroy`` or a replacement does to the quarantine queue
        and the failed-batch bucket made here. Default ``RemovalPolicy.RETAIN``: they may hold
        the only copy of a record (the stream trims it after 24 h); the retained queue still
        expires its messages after 14 days, and an empty one costs nothing. ``DESTROY`` for a
        stack whose failed records may be lost with it. A queue or bucket given is left as it
        is.
    :param redrive: Default True: a :class:`StreamRedrive` function that replays the
        on-failure destination and the quarantine queue through this consumer once a fault is
        fixed (docs/operations.md, "Redrive"): the way to replay failed batches must exist
        before the alarm fires; idle, it costs nothing. Turn it off only if you redrive another
        way.
    """

    on_failure: lambda_.IEventSourceDlq | None = None
    on_failure_queue: sqs.IQueue | None = None
    failed_batch_retention: Duration | None = None
    quarantine_queue: sqs.IQueue | None = None
    encryption_key: kms.IKey | None = None
    idempotency_table: IdempotencyTable | dynamodb.ITable | None = None
    marker_lifetime: Duration | None = None
    redrive: bool = defaults.REDRIVE
    removal_policy: RemovalPolicy = defaults.RECORD_REMOVAL_POLICY

    def problems(self, consumer_timeout: Duration | None) -> list[Problem]:
        """The redrive must outlast one consumer invocation (``consumer_timeout``) plus its
        margin. An invalid or unknown timeout is reported by the function's checks alone."""
        if not isinstance(self.redrive, bool):
            return check_flag("redrive", self.redrive)
        found = check_on_failure(self.on_failure, self.on_failure_queue)
        found += check_failed_batch_retention(self.failed_batch_retention)
        found += check_removal_policy(self.removal_policy)
        return found + self._redrive_problems(consumer_timeout)

    def _redrive_problems(self, consumer_timeout: Duration | None) -> list[Problem]:
        if (
            not self.redrive
            or consumer_timeout is None
            or check_function_timeout("", consumer_timeout)
            or reserve_seconds(consumer_timeout) < defaults.REDRIVE_TIMEOUT_SECONDS
        ):
            return []
        limit = defaults.REDRIVE_TIMEOUT_SECONDS - defaults.REDRIVE_DEADLINE_MARGIN_SECONDS
        return [
            Problem(
                "redrive",
                f"True with a consumer timeout of {consumer_timeout.to_seconds():g} s",
                f"a consumer timeout below {limit} s (the redrive runs at most "
                f"{defaults.REDRIVE_TIMEOUT_SECONDS} s and must wait for one consumer invocation "
                f"plus {defaults.REDRIVE_DEADLINE_MARGIN_SECONDS} s), or redrive=False",
            )
        ]
