"""Replaying an S3 on-failure destination: each object holds its batch, replayed in stream order
and deleted once all its records succeeded; a shard's later objects wait behind a failed one."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from cdc_consumer.exceptions import ForeignMessageError, MalformedMessageError
from cdc_consumer.redrive.messages import OnFailureObject, parse_on_failure_object
from cdc_consumer.redrive.replayer import Replayer
from cdc_consumer.redrive.report import FailedMessage, PlannedMessage, RedriveReport

__all__ = ["BucketReplay"]


@dataclass
class BucketReplay:
    """One run over the objects under ``s3://bucket/prefix`` of the consumer's stream (and,
    when given, function and mapping); ``should_stop`` is asked before each object and
    ``progress`` told after each one deleted."""

    s3_client: Any
    bucket: str
    prefix: str
    stream_arn: str
    function_name: str | None
    mapping_uuid: str | None
    replayer: Replayer
    report: RedriveReport
    dry_run: bool = False
    should_stop: Callable[[], bool] | None = None
    progress: Callable[[int, RedriveReport], None] | None = None
    #: Shard id -> the key of its first failed object.
    _blocked: dict[str, str] = field(default_factory=dict, init=False)

    def replay(self, max_objects: int) -> None:
        """Replay the first ``max_objects`` keys' objects, in stream order."""
        keys: list[str] = []
        for page in self.s3_client.get_paginator("list_objects_v2").paginate(
            Bucket=self.bucket, Prefix=self.prefix
        ):
            keys += [item["Key"] for item in page.get("Contents", [])]
        objects = self._read_objects(sorted(keys)[:max_objects])
        objects.sort(key=lambda o: (o.batch.shard_id, int(o.batch.start_sequence_number)))
        for index, item in enumerate(objects):
            if self.should_stop is not None and self.should_stop():
                self.report.messages_deferred += len(objects) - index
                break
            if self._replay_object(item) and self.progress is not None:
                self.progress(index + 1, self.report)

    def _replay_object(self, item: OnFailureObject) -> bool:
        """Replay one object; True when it was replayed and deleted."""
        shard = item.batch.shard_id
        if shard in self._blocked:
            self.report.failed.append(
                FailedMessage(
                    item.key,
                    f"kept: an earlier batch of shard {shard} ({self._blocked[shard]}) was not"
                    " replayed, and this one must not overtake it",
                )
            )
            return False
        records = self.replayer.delivered(item.records, self.report)
        if self.dry_run:
            batch = item.batch
            self.report.planned.append(
                PlannedMessage(
                    item.key,
                    shard,
                    batch.start_sequence_number,
                    batch.end_sequence_number,
                    len(records),
                )
            )
            return False
        failure = self.replayer.replay(records, self.report)
        if failure is None:
            failure = self._delete_object(item.key)
        if failure is not None:
            self.report.failed.append(FailedMessage(item.key, failure))
            self._blocked[shard] = item.key
            return False
        self.report.messages_deleted += 1
        return True

    def _read_objects(self, keys: Sequence[str]) -> list[OnFailureObject]:
        objects: list[OnFailureObject] = []
        for key in keys:
            self.report.messages_received += 1
            try:
                body = self.s3_client.get_object(Bucket=self.bucket, Key=key)["Body"].read()
            except (ClientError, BotoCoreError) as error:
                detail = getattr(error, "response", {}).get("Error", {})
                reason = f"{detail.get('Code')}: {detail.get('Message')}" if detail else error
                self.report.failed.append(
                    FailedMessage(key, f"cannot read the object ({reason}); kept")
                )
                continue
            try:
                objects.append(
                    parse_on_failure_object(
                        key, body, self.stream_arn, self.function_name, self.mapping_uuid
                    )
                )
            except ForeignMessageError as error:
                self.report.kept.append(FailedMessage(key, str(error)))
            except MalformedMessageError as error:
                self.report.failed.append(FailedMessage(key, f"{error} (kept)"))
        return objects

    def _delete_object(self, key: str) -> str | None:
        try:
            self.s3_client.delete_object(Bucket=self.bucket, Key=key)
        except (ClientError, BotoCoreError) as error:
            return (
                f"all its records were replayed, but deleting it failed ({error}); a second run"
                " replays it again as no-ops (the consumer's markers) and deletes it"
            )
        return None
