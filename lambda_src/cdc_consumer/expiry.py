"""Telling a TTL deletion from a user's delete, in every region of a global table.

DynamoDB's TTL process deletes an expired item and writes a REMOVE record with
``userIdentity {type: Service, principalId: dynamodb.amazonaws.com}``. On a global table
(version 2019.11.21) that identity is on the record of the region whose TTL process deleted
the item only: the deletion is replicated to every other replica, and there it arrives as a
plain REMOVE, without ``type`` or ``principalId`` (DynamoDB developer guide, "Time to Live":
"These replicated writes do not contain type or principalID properties").

So on a table with replicas (``CDC_REPLICATED_TABLE``), :class:`ExpiryRule` also counts as an
expiry a REMOVE whose old image's TTL attribute (``CDC_TTL_ATTRIBUTE``, epoch seconds) lies at
or before the record's creation time and within the five years DynamoDB's TTL process acts on.
The price: a user's delete of an item already past its TTL is counted as an expiry too (the
item had expired; DynamoDB would have deleted it). On a single-region table the identity alone
decides, as before.

A filter pattern cannot compare two values of a record, so a mapping cannot select replicated
expiries: where a consumer's filter names the TTL identity, the constructs widen the mapping's
filter and set the consumer's own patterns in ``CDC_RECORD_FILTERS``; :func:`keep_declared`
applies them to :func:`expiry_view` of each record (the record with the identity it would
carry in the region that deleted it), and :class:`~cdc_consumer.ConsumerGroup` matches its
members' filters the same way. See docs/global-tables.md.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any

from cdc_consumer.exceptions import UndecodableRecordError

if TYPE_CHECKING:
    from cdc_consumer.routes.route import Route

__all__ = [
    "TTL_PRINCIPAL",
    "ExpiryRule",
    "expiry_view",
    "is_expiry",
    "is_ttl_identity",
    "keep_declared",
]

#: The identity DynamoDB puts on the REMOVE records of items its TTL process deleted.
TTL_PRINCIPAL = {"type": "Service", "principalId": "dynamodb.amazonaws.com"}

#: DynamoDB's TTL process skips items whose TTL lies more than five years in the past, so such an
#: item is never an expiry (cdc_consumer.ttl.TTL_WINDOW, in microseconds).
_WINDOW_US = 5 * 365 * 86_400 * 1_000_000


def is_ttl_identity(identity: Any) -> bool:
    """Whether ``identity`` (a record's ``userIdentity``) is the TTL process's."""
    return isinstance(identity, Mapping) and all(
        identity.get(name) == value for name, value in TTL_PRINCIPAL.items()
    )


@dataclass(frozen=True)
class ExpiryRule:
    """How a consumer tells a TTL deletion: by the service identity, and on a table with
    replicas (``replicated``) also by the old image's ``attribute`` against the record's
    creation time (see the module docstring)."""

    attribute: str | None = None
    replicated: bool = False

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> ExpiryRule:
        """The rule ``CDC_REPLICATED_TABLE`` and ``CDC_TTL_ATTRIBUTE`` declare (the constructs
        set them on a consumer of a table with replicas)."""
        from cdc_consumer import (
            environment_variables,  # not at import: a handler's import stays light
        )

        environ = os.environ if environ is None else environ
        return cls(
            attribute=environ.get(environment_variables.TTL_ATTRIBUTE_ENV) or None,
            replicated=environ.get(environment_variables.REPLICATED_TABLE_ENV, "").lower()
            == "true",
        )

    def is_expiry(self, identity: Any, old_image: Any, creation_time_us: int | None) -> bool:
        """Whether a REMOVE record with this ``userIdentity``, old image (as the stream carries
        it: ``{"expireAt": {"N": "1767225600"}}``) and creation time is a TTL deletion."""
        if is_ttl_identity(identity):
            return True
        if not (self.replicated and self.attribute) or creation_time_us is None:
            return False
        value = old_image.get(self.attribute) if isinstance(old_image, Mapping) else None
        number = value.get("N") if isinstance(value, Mapping) else None
        try:
            expires_us = Decimal(number) * 1_000_000  # type: ignore[arg-type]
        except (InvalidOperation, TypeError, ValueError):
            return False  # no TTL attribute, or not a Number: DynamoDB's TTL ignores the item
        return expires_us.is_finite() and creation_time_us - _WINDOW_US <= expires_us <= (
            creation_time_us
        )

    def is_expiry_record(self, document: Mapping[str, Any], route: Route | None = None) -> bool:
        """:meth:`is_expiry` of a DynamoDB change as ``route`` carries it (its creation time in
        the route's unit). Default: :data:`cdc_consumer.routes.DEFAULT_ROUTE`, a DynamoDB stream
        record's (epoch seconds)."""
        if document.get("eventName") != "REMOVE":
            return False
        stream = document.get("dynamodb")
        stream = stream if isinstance(stream, Mapping) else {}
        created = _creation_time_us(stream, route)
        return self.is_expiry(document.get("userIdentity"), stream.get("OldImage"), created)


def _creation_time_us(stream: Mapping[str, Any], route: Route | None) -> int | None:
    # On first use, not at import: the constructs import this module (TTL_PRINCIPAL).
    from cdc_consumer.routes import DEFAULT_ROUTE

    try:
        return (route or DEFAULT_ROUTE).created(stream, "")[0]
    except UndecodableRecordError:
        return None


_cached: tuple[tuple[str | None, str | None], ExpiryRule] = ((None, None), ExpiryRule())


def current_rule() -> ExpiryRule:
    """The rule of this function's environment (read again when the variables change: the local
    pipeline runs several functions in one process)."""
    global _cached
    from cdc_consumer import (
        environment_variables,  # on first use, not at import: a handler's import stays light
    )

    key = (
        os.environ.get(environment_variables.REPLICATED_TABLE_ENV),
        os.environ.get(environment_variables.TTL_ATTRIBUTE_ENV),
    )
    if _cached[0] != key:
        _cached = (key, ExpiryRule.from_environment())
    return _cached[1]


def is_expiry(identity: Any, old_image: Any, creation_time_us: int | None) -> bool:
    """Whether a REMOVE record is a TTL deletion: the identity says so, or the function's
    :func:`current_rule` (on a table with replicas) tells it by the item's TTL attribute."""
    return is_ttl_identity(identity) or current_rule().is_expiry(None, old_image, creation_time_us)


def expiry_view(record: Any, rule: ExpiryRule | None = None) -> Any:
    """What a filter matches for ``record`` (its route's
    :meth:`~cdc_consumer.routes.route.Route.filter_view`) with the TTL identity on a replicated
    TTL deletion, so a filter on that identity matches it as it matches the deletion in its own
    region."""
    from cdc_consumer.routes import route_of  # on first use (see _creation_time_us)

    rule = current_rule() if rule is None else rule
    route = route_of(record)
    if not rule.replicated or not isinstance(record, Mapping):
        return route.filter_view(record)
    return route.filter_view(record, lambda document: _marked(document, rule, route))


def _marked(document: Mapping[str, Any], rule: ExpiryRule, route: Route) -> Any:
    """``document`` (a DynamoDB change) with the TTL identity when ``rule`` tells it is a
    replicated expiry. A change may carry ``userIdentity: null`` where a stream record has
    none."""
    if document.get("userIdentity") is not None:
        return document
    if not rule.is_expiry_record(document, route):
        return document
    return {**document, "userIdentity": dict(TTL_PRINCIPAL)}


def keep_declared(event: Mapping[str, Any], environ: Mapping[str, str] | None = None) -> Any:
    """``event`` without the records the consumer's own filters (``CDC_RECORD_FILTERS``) do not
    match once replicated TTL deletions are recognised; ``event`` itself when the variable is
    unset or every record matches."""
    from cdc_consumer import environment_variables
    from cdc_consumer.filter_patterns import FilterCriteria  # only where filters were widened

    environ = os.environ if environ is None else environ
    declared = environ.get(environment_variables.RECORD_FILTERS_ENV)
    records = event.get("Records") if isinstance(event, Mapping) else None
    if not declared or not isinstance(records, list):
        return event
    criteria = FilterCriteria(json.loads(declared), where=environment_variables.RECORD_FILTERS_ENV)
    rule = ExpiryRule.from_environment(environ)
    kept = [r for r in records if criteria.matches(expiry_view(r, rule))]
    return event if len(kept) == len(records) else {**event, "Records": kept}
