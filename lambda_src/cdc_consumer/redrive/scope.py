"""Whose batches a command-line redrive may replay: one consumer's mapping, or the run does not
start.

A bucket (or an on-failure queue) may hold several consumers' failed batches; replaying another
consumer's batch through this consumer applies it to the wrong view and deletes it from where
its own consumer's redrive would find it. So the command line scopes each run to one consumer
before it touches anything:

- ``--bucket``: the mapping's UUID (Lambda writes ``aws/lambda/<mapping UUID>/...``) from
  ``--mapping-uuid``, else the UUID in ``--prefix``, else ``EVENT_SOURCE_MAPPING_UUID`` in the
  consumer's environment, else the one mapping of ``--function-name`` on ``--stream-arn``
  (``ListEventSourceMappings``). The default prefix (``aws/lambda/``) then reads every mapping
  of the consumer's function on the stream, as the redrive function does: a replaced mapping's
  batches hold earlier changes as much as the current one's
  (:mod:`~cdc_consumer.redrive.mapping_prefixes`); ``--mapping-uuid`` narrows the run to that
  one mapping's objects.
- an on-failure queue: the consumer function (the messages name it in
  ``requestContext.functionArn``): ``--function-name``, or ``--consumer-function`` with
  ``--handler``.
- the quarantine: the consumer's name and its group's members (``--consumer-name``,
  ``--member``, or the consumer's environment; see :mod:`cdc_consumer.redrive.cli`); with
  ``--on-failure-bucket`` (or ``ON_FAILURE_BUCKET_NAME``), the mapping as for ``--bucket``: a
  quarantined record waits while that bucket holds an earlier change of its item.

Without enough to know it, :func:`consumer_scope` raises
:class:`~cdc_consumer.exceptions.RedriveSetupError`: one line, exit 2, nothing touched.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from cdc_consumer.environment_variables import MAPPING_UUID_ENV, ON_FAILURE_BUCKET_ENV
from cdc_consumer.exceptions import RedriveSetupError
from cdc_consumer.redrive.access import setup_error
from cdc_consumer.redrive.messages import Source
from cdc_consumer.redrive_shapes import ON_FAILURE_S3_PREFIX

__all__ = ["Scope", "consumer_scope"]

#: A mapping's UUID in a prefix: ``aws/lambda/<mapping UUID>/`` (anywhere below the root).
_PREFIX_MAPPING = re.compile(
    rf"(?:^|/){re.escape(ON_FAILURE_S3_PREFIX)}(?P<mapping>[0-9a-fA-F-]{{36}})(?:/|$)"
)


@dataclass(frozen=True)
class Scope:
    """The one consumer a run replays for: its function (None for a quarantine run, scoped by
    name) and, with a bucket (the one replayed, or the one a quarantine run looks at for
    earlier changes), its mapping and the prefix to list."""

    function_name: str | None
    bucket: str | None
    mapping_uuid: str | None
    prefix: str


def consumer_scope(args: argparse.Namespace, session: Any, environment: Mapping[str, str]) -> Scope:
    """The scope of the run ``args`` describe (see the module docstring)."""
    function_name = args.function_name or args.consumer_function or None
    if args.source == Source.ON_FAILURE.value and not args.bucket and function_name is None:
        raise RedriveSetupError(
            "--queue-url with --handler: whose batches? an on-failure queue may hold several"
            " consumers' messages; give --consumer-function NAME (the function whose mapping"
            " wrote them)"
        )
    bucket = args.bucket
    if args.source == Source.QUARANTINE.value:
        bucket = args.on_failure_bucket or environment.get(ON_FAILURE_BUCKET_ENV) or None
    if not bucket:
        return Scope(function_name, None, None, args.prefix)
    uuid = _mapping_uuid(args, session, environment, function_name, bucket)
    prefix = args.prefix
    if prefix == ON_FAILURE_S3_PREFIX and args.mapping_uuid:
        prefix = f"{ON_FAILURE_S3_PREFIX}{uuid}/"
    return Scope(function_name, bucket, uuid, prefix)


def _mapping_uuid(
    args: argparse.Namespace,
    session: Any,
    environment: Mapping[str, str],
    function_name: str | None,
    bucket: str,
) -> str:
    found = _PREFIX_MAPPING.search(args.prefix)
    in_prefix = found["mapping"] if found else None
    given = args.mapping_uuid or None
    if given and in_prefix and given.lower() != in_prefix.lower():
        raise RedriveSetupError(
            f"--mapping-uuid {given} and --prefix {args.prefix!r} (mapping {in_prefix}) name two"
            " mappings; give one"
        )
    uuid = given or in_prefix or environment.get(MAPPING_UUID_ENV)
    if uuid:
        return str(uuid)
    if function_name is not None:
        return _looked_up(session, function_name, args.stream_arn)
    raise RedriveSetupError(
        f"bucket {bucket}: whose batches? a bucket may hold several consumers' failed"
        " batches; give --mapping-uuid UUID (or --prefix aws/lambda/<UUID>/, or"
        " --function-name to look the mapping up)"
    )


def _looked_up(session: Any, function_name: str, stream_arn: str) -> str:
    """The UUID of the one mapping of ``function_name`` on ``stream_arn``."""
    try:
        mappings = session.client("lambda").list_event_source_mappings(
            FunctionName=function_name, EventSourceArn=stream_arn
        )["EventSourceMappings"]
    except (ClientError, BotoCoreError) as error:
        raise setup_error(
            error,
            f"list the event source mappings of {function_name}",
            "give --mapping-uuid UUID",
        ) from None
    if len(mappings) != 1:
        raise RedriveSetupError(
            f"function {function_name} has {len(mappings)} event source mapping(s) on"
            f" {stream_arn}; expected one: give --mapping-uuid UUID"
        )
    return str(mappings[0]["UUID"])
