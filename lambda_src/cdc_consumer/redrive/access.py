"""The checks redrive makes before it touches anything: a stream ARN that is one, a queue or
bucket these credentials can read; each failure is one operator line
(:class:`~cdc_consumer.exceptions.RedriveSetupError`)."""

from __future__ import annotations

import re
from collections.abc import Callable

from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError

from cdc_consumer.exceptions import RedriveSetupError

__all__ = [
    "MISSING_BUCKET_CODES",
    "MISSING_QUEUE_CODES",
    "STREAM_ARN_PATTERN",
    "check_access",
    "check_stream_arn",
    "setup_error",
]

#: A DynamoDB stream ARN: ``arn:<partition>:dynamodb:<region>:<account>:table/<t>/stream/<label>``.
STREAM_ARN_PATTERN = re.compile(
    r"^arn:aws[a-z-]*:dynamodb:[a-z0-9-]+:\d{12}:table/[^/]+/stream/[^/]+$"
)
#: SQS error codes for a queue that does not exist (query and JSON protocols).
MISSING_QUEUE_CODES = frozenset({"AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist"})
#: S3 error codes for a bucket that does not exist.
MISSING_BUCKET_CODES = frozenset({"NoSuchBucket", "404"})


def check_stream_arn(stream_arn: str) -> None:
    """Raise :class:`RedriveSetupError` unless ``stream_arn`` is a DynamoDB stream ARN."""
    if not STREAM_ARN_PATTERN.match(stream_arn or ""):
        raise RedriveSetupError(
            f"stream ARN {stream_arn!r} is not a DynamoDB stream ARN"
            " (arn:aws:dynamodb:REGION:ACCOUNT:table/TABLE/stream/LABEL): pass the consumer's"
            " stream, e.g. the table's LatestStreamArn"
        )


def setup_error(error: Exception, what: str, fix: str) -> RedriveSetupError:
    """The one-line operator error for an AWS call that could not even start."""
    if isinstance(error, NoCredentialsError):
        return RedriveSetupError(
            f"no AWS credentials to {what}: set AWS_PROFILE or AWS_ACCESS_KEY_ID/"
            "AWS_SECRET_ACCESS_KEY (or run where a role is attached)"
        )
    if isinstance(error, ClientError):
        code = error.response.get("Error", {}).get("Code", "")
        message = error.response.get("Error", {}).get("Message", "")
        return RedriveSetupError(f"cannot {what} ({code}: {message}): {fix}")
    return RedriveSetupError(f"cannot {what} ({error}): {fix}")


def check_access(
    read: Callable[[], object], what: str, missing_codes: frozenset[str], missing: str, fix: str
) -> None:
    """Make one cheap ``read`` of a queue or bucket; if AWS refuses it, raise the one-line
    :func:`setup_error` with the fix ``missing`` (the error code says it does not exist) or
    ``fix`` (anything else)."""
    try:
        read()
    except (ClientError, BotoCoreError) as error:
        code = getattr(error, "response", {}).get("Error", {}).get("Code", "")
        raise setup_error(error, what, missing if code in missing_codes else fix) from None
