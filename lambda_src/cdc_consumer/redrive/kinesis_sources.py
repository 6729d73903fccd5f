"""Where a Kinesis mapping's failure records wait: an S3 bucket (each object holds its batch) or an
SQS queue (each message points at its batch). Each source collects this consumer's records,
reads one again to replay it, deletes it after success, and releases what it keeps.

What is not this consumer's (another mapping's, function's or stream's) is reported ``kept`` and
never read further; what cannot be read is reported ``failed`` and, when its shard is known,
holds that shard's later batches (:attr:`stalled`)."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from cdc_consumer.exceptions import ForeignMessageError, MalformedMessageError
from cdc_consumer.redrive.kinesis_failures import KinesisFailure, parse_kinesis_failure
from cdc_consumer.redrive.messages import OnFailureKey, parse_on_failure_key
from cdc_consumer.redrive.report import FailedMessage, RedriveReport
from cdc_consumer.redrive_shapes import RedriveCause

__all__ = ["KinesisBucket", "KinesisQueue"]


@dataclass
class KinesisBucket:
    """The on-failure objects under ``s3://bucket/prefix`` of one mapping (``mapping_uuid``,
    when known: its UUID is in each key) and function."""

    s3_client: Any
    bucket: str
    prefix: str
    stream_arn: str
    function_name: str | None = None
    mapping_uuid: str | None = None
    #: Shard id -> the first object of it that could not be read (its shard waits).
    stalled: dict[str, str] = field(default_factory=dict)

    @property
    def location(self) -> str:
        return f"s3://{self.bucket}/{self.prefix}"

    def collect(self, limit: int, report: RedriveReport) -> list[KinesisFailure]:
        """This consumer's first ``limit`` objects (by the time in their keys), checked and
        without their records (one object's records are in memory at a time)."""
        ours = self._listed(report)
        ours.sort(key=lambda where: (where.written, where.key))
        for where in ours[limit:]:
            report.messages_deferred += 1
            self.stalled.setdefault(where.shard_id, where.key)  # its later batches wait too
        report.messages_received -= len(ours[limit:])
        found = []
        for where in ours[:limit]:
            try:
                found.append(self.load(where.key).without_records())
            except ForeignMessageError as error:
                report.kept.append(FailedMessage(where.key, str(error), RedriveCause.FOREIGN))
            except MalformedMessageError as error:
                reason = f"{error} (kept)"
                report.failed.append(FailedMessage(where.key, reason, RedriveCause.UNREADABLE))
                self.stalled.setdefault(where.shard_id, where.key)
        return found

    def _listed(self, report: RedriveReport) -> list[OnFailureKey]:
        ours: list[OnFailureKey] = []
        paginator = self.s3_client.get_paginator("list_objects_v2")
        for page in paginator.paginate(Bucket=self.bucket, Prefix=self.prefix):
            for item in page.get("Contents", []):
                report.messages_received += 1
                key = item["Key"]
                try:
                    ours.append(parse_on_failure_key(key, self.mapping_uuid))
                except ForeignMessageError as error:
                    report.kept.append(FailedMessage(key, str(error), RedriveCause.FOREIGN))
                except MalformedMessageError as error:
                    reason = f"{error} (kept)"
                    report.failed.append(FailedMessage(key, reason, RedriveCause.UNREADABLE))
        return ours

    def load(self, failure: KinesisFailure | str) -> KinesisFailure:
        """The object (a key, or a collected failure), read and checked, with its records."""
        key = failure if isinstance(failure, str) else failure.where
        try:
            body = self.s3_client.get_object(Bucket=self.bucket, Key=key)["Body"].read()
        except (ClientError, BotoCoreError) as error:
            raise MalformedMessageError(f"cannot read object {key} ({error})") from None
        loaded = parse_kinesis_failure(body, key, self.stream_arn, self.function_name)
        where = parse_on_failure_key(key, self.mapping_uuid)
        if where.shard_id != loaded.shard_id:
            raise MalformedMessageError(
                f"object {key}: the key names shard {where.shard_id!r}, its batch info"
                f" {loaded.shard_id!r}; expected the same shard"
            )
        return loaded

    def delete(self, failure: KinesisFailure) -> None:
        """Delete the object (the versioned bucket keeps it as a noncurrent version)."""
        self.s3_client.delete_object(Bucket=self.bucket, Key=failure.where)

    def release(self) -> None:
        """Nothing to release: objects stay where they are."""


@dataclass
class KinesisQueue:
    """The on-failure messages of an SQS queue; each received message stays invisible while the
    run works and is made visible again at the end unless it was deleted."""

    sqs_client: Any
    queue_url: str
    stream_arn: str
    function_name: str | None
    visibility_timeout_seconds: int
    receive_wait_seconds: int
    stalled: dict[str, str] = field(default_factory=dict)
    _handles: dict[str, str] = field(default_factory=dict)

    @property
    def location(self) -> str:
        return self.queue_url

    def collect(self, limit: int, report: RedriveReport) -> list[KinesisFailure]:
        """Up to ``limit`` messages, checked (pointers: they hold no records)."""
        found: list[KinesisFailure] = []
        while len(self._handles) < limit:
            messages = self.sqs_client.receive_message(
                QueueUrl=self.queue_url,
                MaxNumberOfMessages=min(10, limit - len(self._handles)),
                WaitTimeSeconds=self.receive_wait_seconds,
                VisibilityTimeout=self.visibility_timeout_seconds,
            ).get("Messages", [])
            if not messages:
                break
            for message in messages:
                report.messages_received += 1
                self._handles[message["MessageId"]] = message["ReceiptHandle"]
                parsed = self._parse(message, report)
                if parsed is not None:
                    found.append(parsed)
        return found

    def _parse(self, message: Mapping[str, Any], report: RedriveReport) -> KinesisFailure | None:
        where = message["MessageId"]
        try:
            return parse_kinesis_failure(
                message["Body"], where, self.stream_arn, self.function_name
            )
        except ForeignMessageError as error:
            report.kept.append(FailedMessage(where, str(error), RedriveCause.FOREIGN))
        except MalformedMessageError as error:
            reason = f"{error} (kept)"
            report.failed.append(FailedMessage(where, reason, RedriveCause.UNREADABLE))
        return None

    def load(self, failure: KinesisFailure) -> KinesisFailure:
        return failure

    def delete(self, failure: KinesisFailure) -> None:
        handle = self._handles.pop(failure.where)
        self.sqs_client.delete_message(QueueUrl=self.queue_url, ReceiptHandle=handle)

    def release(self) -> None:
        """Make every message not deleted visible again, so the next run sees it at once."""
        for handle in self._handles.values():
            # Should this fail, the message reappears once its visibility timeout ends.
            with contextlib.suppress(ClientError, BotoCoreError):
                self.sqs_client.change_message_visibility(
                    QueueUrl=self.queue_url, ReceiptHandle=handle, VisibilityTimeout=0
                )
        self._handles.clear()
