"""LatestImage: a replica of the source table kept by version (docs/design.md §9).

The replica / search-index pattern: the view holds, for each source item, the item's key, its
NEW image and the version of the change it was written from. Each write is version-guarded
(:mod:`cdc_consumer.sinks.guarded`), so an older or equal change is a no-op, and a REMOVE leaves a
versioned *tombstone* (the key, the version and ``cdc_deleted = true``) so that an older change
arriving after the delete cannot bring the item back. The view therefore ends equal to the
table whatever the delivery order and however often a change is delivered: on a route that
delivers one item's changes in order and once each and on one that reorders and repeats them
alike (:mod:`cdc_consumer.routes`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from typing import Any

from boto3.dynamodb.types import TypeSerializer

from cdc_consumer import defaults
from cdc_consumer.change import Change
from cdc_consumer.exceptions import ConfigurationError, PermanentError
from cdc_consumer.sinks.guarded import guard
from cdc_consumer.versions import VERSION_ATTRIBUTE

#: The tombstone flag (BOOL true) a REMOVE leaves in the view.
DELETED_ATTRIBUTE = "cdc_deleted"

_serializer = TypeSerializer()


class LatestImage:
    """A projection writing each change's NEW image to ``table_name``, guarded by version.

    Register it like any projection: ``processor.projection(LatestImage(table_name="replica"))``.

    :param table_name: the view table (same key schema as the source table). Or
    :param table_name_env: the environment variable holding it, read at each change (for a
        handler module imported before its environment is known). One of the two is required.
    :param version_attribute: Default ``cdc_version``: the version of the change the view item
        was written from (a String whose order is the changes' order).
    :param deleted_attribute: Default ``cdc_deleted``: ``true`` on a tombstone. Readers of the
        view skip tombstones (:meth:`is_tombstone`).
    :param tombstone_ttl: ``(attribute, seconds)``: give tombstones a TTL attribute of now +
        seconds (epoch seconds), so DynamoDB deletes them once no older change can still
        arrive. A tombstone guards the deletion's version as a marker guards a record, so it
        is kept at least the consumer's marker lifetime (``CDC_MARKER_TTL_SECONDS``, derived
        from its replay windows: docs/design.md "Markers outlive every replay window"), longer
        than ``seconds`` when that is shorter: an older change replayed after the tombstone
        expired would bring the item back. Default none: tombstones stay.
    :param clock: epoch seconds for ``tombstone_ttl``; default ``time.time``.

    A change whose record lacks a creation time has no version: :class:`MissingVersionError`
    (poison). An INSERT or MODIFY without a NEW image (a stream whose view type omits it)
    raises :class:`PermanentError` naming the view type to use. An image holding the version
    or deleted attribute raises it too (it would be overwritten).
    """

    #: A backfill's snapshot rows are versions like any change's (docs/backfill.md).
    takes_snapshots = True

    def __init__(
        self,
        table_name: str | None = None,
        *,
        table_name_env: str | None = None,
        version_attribute: str = VERSION_ATTRIBUTE,
        deleted_attribute: str = DELETED_ATTRIBUTE,
        tombstone_ttl: tuple[str, int] | None = None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        if bool(table_name) == bool(table_name_env):
            raise ConfigurationError(
                "LatestImage needs exactly one of table_name and table_name_env, got "
                f"table_name={table_name!r}, table_name_env={table_name_env!r}"
            )
        if version_attribute == deleted_attribute:
            raise ConfigurationError(
                f"version_attribute and deleted_attribute must differ, both {version_attribute!r}"
            )
        self.table_name = table_name
        self.table_name_env = table_name_env
        self.version_attribute = version_attribute
        self.deleted_attribute = deleted_attribute
        self.tombstone_ttl = tombstone_ttl
        self.clock = clock or time.time
        self.__name__ = f"latest_image[{table_name or table_name_env}]"

    def table(self) -> str:
        """The view table's name (from the environment with ``table_name_env``)."""
        if self.table_name:
            return self.table_name
        assert self.table_name_env is not None
        name = os.environ.get(self.table_name_env)
        if not name:
            # Not the record's fault: transient, so the batch stops instead of quarantining.
            raise RuntimeError(f"{self.table_name_env} is not set: the latest-image view table")
        return name

    def __call__(self, change: Change) -> list[dict[str, Any]]:
        """The one version-guarded Put this change makes in the view."""
        version = change.version
        if change.event_name == "REMOVE":
            item = {name: _serializer.serialize(value) for name, value in change.keys.items()}
            item[self.deleted_attribute] = {"BOOL": True}
            if self.tombstone_ttl is not None:
                attribute, seconds = self.tombstone_ttl
                lifetime = max(seconds, defaults.marker_ttl_seconds())
                item[attribute] = {"N": str(int(self.clock()) + lifetime)}
        else:
            if change.new_image is None:
                raise PermanentError(
                    f"record {change.sequence_number} ({change.event_name}) has no NEW image: "
                    "LatestImage needs a stream view type with NEW images (NEW_IMAGE or "
                    "NEW_AND_OLD_IMAGES)"
                )
            reserved = {self.version_attribute, self.deleted_attribute} & set(change.new_image)
            if reserved:
                raise PermanentError(
                    f"record {change.sequence_number}: the item has attribute(s) "
                    f"{sorted(reserved)}, which LatestImage writes itself; pass other "
                    "version_attribute / deleted_attribute names"
                )
            item = {name: _serializer.serialize(value) for name, value in change.new_image.items()}
        put = {"Put": {"TableName": self.table(), "Item": item}}
        key = {name: _serializer.serialize(value) for name, value in change.keys.items()}
        return [guard(put, version, self.version_attribute, key=key)]

    def is_tombstone(self, item: Mapping[str, Any]) -> bool:
        """Whether a view item (plain or DynamoDB JSON) is a tombstone.

        :param item: a view item as read from the view table, either deserialized (boto3's
            resource or ``TypeDeserializer``: ``True``) or in DynamoDB JSON (the client's
            ``{"BOOL": true}``), so a reader of either client can tell a deleted item.
        """
        value = item.get(self.deleted_attribute)
        return value is True or value == {"BOOL": True}

    def image(self, item: Mapping[str, Any]) -> dict[str, Any] | None:
        """A plain view item as the source item it replicates (None for a tombstone).

        :param item: a deserialized view item (boto3's resource, or ``TypeDeserializer``):
            its version attribute is dropped, since it is the view's bookkeeping, not the
            source's data.
        """
        if self.is_tombstone(item):
            return None
        return {name: value for name, value in item.items() if name != self.version_attribute}
