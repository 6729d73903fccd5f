"""The checks redrive makes before it touches anything: a stream ARN of a route
(:func:`~cdc_consumer.routes.replay.route_of_stream`), a queue or bucket these credentials can
read; each failure is one operator line (:class:`~cdc_consumer.exceptions.RedriveSetupError`)."""

from __future__ import annotations

from collections.abc import Callable

from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError

from cdc_consumer.exceptions import RedriveSetupError
from cdc_consumer.routes.replay import route_of_stream

__all__ = [
    "MISSING_BUCKET_CODES",
    "MISSING_QUEUE_CODES",
    "check_access",
    "check_stream_arn",
    "setup_error",
]

#: SQS error codes for a queue that does not exist (query and JSON protocols).
MISSING_QUEUE_CODES = frozenset({"AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist"})
#: S3 error codes for a bucket that does not exist.
MISSING_BUCKET_CODES = frozenset({"NoSuchBucket", "404"})


def check_stream_arn(stream_arn: str) -> None:
    """Raise :class:`RedriveSetupError` unless ``stream_arn`` is a stream ARN of a route (the
    error names the value and every route's shape)."""
    route_of_stream(stream_arn)


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
