"""What happens to records a consumer fails on: the on-failure destination, the quarantine
queue, the idempotency table that makes retries safe, and the redrive that replays them."""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import Duration
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sqs as sqs

from cdc_constructs import defaults
from cdc_constructs.exceptions import Problem
from cdc_constructs.idempotency_table import IdempotencyTable
from cdc_constructs.redrive import reserve_seconds
from cdc_constructs.validation import check_flag, check_function_timeout

__all__ = ["FailureHandlingOptions"]


@dataclass(frozen=True)
class FailureHandlingOptions:
    """The consumer's failure-handling props.

    :param on_failure_queue: an existing queue for the mapping's on-failure destination.
        Default: a new queue, encrypted, TLS-only, 14 days retention (the longest time SQS
        keeps a message to notice and redrive a failed batch).
    :param quarantine_queue: an existing queue for poison records. Default: likewise.
    :param encryption_key: a customer KMS key for the queues made here. Default:
        SQS-managed encryption.
    :param idempotency_table: an :class:`IdempotencyTable` or ITable (pk ``id``, TTL
        ``expiration``). Default: a new IdempotencyTable; share one between consumers.
    :param redrive: Default True: a :class:`StreamRedrive` function that replays the
        on-failure and quarantine queues through this consumer once a fault is fixed
        (docs/operations.md, "Redrive"). The on-failure queue holds only pointers and the
        stream forgets their records after 24 h, so the way to replay them must exist before
        the alarm fires; idle, it costs nothing. Turn it off only if you redrive another way.
    """

    on_failure_queue: sqs.IQueue | None = None
    quarantine_queue: sqs.IQueue | None = None
    encryption_key: kms.IKey | None = None
    idempotency_table: IdempotencyTable | dynamodb.ITable | None = None
    redrive: bool = defaults.REDRIVE

    def problems(self, consumer_timeout: Duration | None) -> list[Problem]:
        """The redrive must outlast one consumer invocation (``consumer_timeout``) plus its
        margin. An invalid or unknown timeout is reported by the function's checks alone."""
        if not isinstance(self.redrive, bool):
            return check_flag("redrive", self.redrive)
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
