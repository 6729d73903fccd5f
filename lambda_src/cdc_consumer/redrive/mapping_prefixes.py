"""Where a consumer's failed batches are in an S3 on-failure bucket: under every mapping of its
function on its stream, not one mapping's UUID.

Lambda writes a batch under ``aws/lambda/<mapping UUID>/...``. CloudFormation replaces a
mapping when a property that needs it changes (a new UUID); the old mapping's failed batches
stay under its UUID, and they are the consumer's as much as the new one's are. So a prefix at
the root of that layout (``aws/lambda/``) means the consumer's mappings: the UUID folders there
(one ``ListObjectsV2`` with ``Delimiter="/"``) whose first object names the consumer's function
(``requestContext.functionArn``) and stream (its route's batch info); the current mapping's
(``mapping_uuid``) is always one of them. A folder of another function or stream is skipped,
unread beyond that one object (a shared bucket keeps working), and so is a name that is not a
mapping's UUID; a folder whose first object cannot be read is kept (it may hold an earlier
change of the consumer's). At most :data:`~cdc_consumer.redrive.defaults.
DEFAULT_MAX_MAPPING_FOLDERS` folders are looked at. The notes say what was skipped.

A prefix that names one mapping (``aws/lambda/<UUID>/``: the command line's ``--prefix`` or
``--mapping-uuid``), or any prefix when the function is not known, is that prefix alone. The
per-item order then holds within that mapping only, so when the function is known the notes
name the consumer's other mappings' folders that hold batches too (their changes may be earlier
than the run's: replay them first, or run at the root to replay all in one order).
"""

from __future__ import annotations

import re
from dataclasses import replace

from cdc_consumer.exceptions import ForeignMessageError, MalformedMessageError
from cdc_consumer.redrive.bucket_plan import ObjectReader
from cdc_consumer.redrive.defaults import DEFAULT_MAX_MAPPING_FOLDERS
from cdc_consumer.redrive_shapes import ON_FAILURE_S3_PREFIX

__all__ = ["layout_root", "mapping_prefixes"]

#: A mapping's folder name: its UUID.
_UUID = re.compile(r"[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}")
#: Folders named in a note, at most (the rest are counted).
_NAMED = 5


def layout_root(prefix: str) -> str | None:
    """The root of Lambda's layout (``.../aws/lambda/``) when ``prefix`` is it or lies below
    it; None otherwise."""
    head, found, _ = prefix.partition(ON_FAILURE_S3_PREFIX)
    return f"{head}{found}" if found and (not head or head.endswith("/")) else None


def mapping_prefixes(
    reader: ObjectReader,
    prefix: str,
    notes: list[str],
    *,
    max_folders: int = DEFAULT_MAX_MAPPING_FOLDERS,
) -> tuple[ObjectReader, list[str]]:
    """The prefixes of ``reader``'s bucket holding the consumer's batches, and the reader to read
    them with (see the module docstring; one for every mapping found, of any of them)."""
    root = layout_root(prefix)
    if prefix != root:
        if root is not None and reader.function_name is not None:
            _note_other_mappings(reader, prefix, root, notes, max_folders)
        return reader, [prefix]
    current = f"{prefix}{reader.mapping_uuid}/" if reader.mapping_uuid else None
    if reader.function_name is None:  # whose a folder is cannot be told: the current one's
        return reader, [current or prefix]
    skipped: list[str] = []
    wide, ours, beyond = _consumer_folders(reader, prefix, max_folders, notes, skipped)
    if current is not None and current.lower() not in {folder.lower() for folder in ours}:
        ours.append(current)
    if skipped:
        notes.append(
            f"{len(skipped)} folder(s) under {prefix} are not this consumer's mappings' (another"
            f" function's or stream's, or not a mapping's UUID), skipped unread: {_named(skipped)}"
        )
    if beyond:
        notes.append(
            f"the bucket has more than {max_folders} folder(s) under {prefix}: the rest were not"
            " looked at for this consumer's mappings (give --mapping-uuid to replay one of them)"
        )
    return wide, ours


def _note_other_mappings(
    reader: ObjectReader, prefix: str, root: str, notes: list[str], max_folders: int
) -> None:
    """Say which other mappings of the consumer hold batches a run narrowed to ``prefix``
    leaves alone (see the module docstring)."""
    _, ours, beyond = _consumer_folders(reader, root, max_folders, notes, [])
    others = [folder for folder in ours if not prefix.lower().startswith(folder.lower())]
    if others:
        notes.append(
            f"this run replays {prefix} only; this consumer's other mapping folder(s) hold"
            f" failed batches too, whose changes may be earlier than this run's: {_named(others)}"
            f"{' (and folders not looked at)' if beyond else ''}; replay them first, or run at"
            f" {root} (without --mapping-uuid) to replay them all in one order per shard"
        )


def _consumer_folders(
    reader: ObjectReader, root: str, max_folders: int, notes: list[str], skipped: list[str]
) -> tuple[ObjectReader, list[str], bool]:
    """The reader for any of the consumer's mappings, the mapping folders under ``root`` that
    are the consumer's (the others added to ``skipped``), and whether there were more."""
    found, others, beyond = _folders(reader, root, max_folders)
    skipped += others
    wide = replace(reader, mapping_uuid=None)
    return wide, [folder for folder in found if _is_ours(wide, folder, notes, skipped)], beyond


def _named(folders: list[str]) -> str:
    """The first :data:`_NAMED` folders, and how many more."""
    more = len(folders) - _NAMED
    return ", ".join(folders[:_NAMED]) + (f" and {more} more" if more > 0 else "")


def _folders(reader: ObjectReader, root: str, limit: int) -> tuple[list[str], list[str], bool]:
    """The mapping folders under ``root`` (at most ``limit``), the other folders, and whether
    there are more."""
    found: list[str] = []
    others: list[str] = []
    pages = reader.s3_client.get_paginator("list_objects_v2").paginate(
        Bucket=reader.bucket, Prefix=root, Delimiter="/"
    )
    for page in pages:
        for common in page.get("CommonPrefixes") or ():
            folder = common["Prefix"]
            if not _UUID.fullmatch(folder[len(root) :].rstrip("/")):
                others.append(folder)
            elif len(found) == limit:
                return found, others, True
            else:
                found.append(folder)
    return found, others, False


def _is_ours(reader: ObjectReader, folder: str, notes: list[str], skipped: list[str]) -> bool:
    """Whether the first object under ``folder`` is the consumer's (unreadable: it may be)."""
    listed = reader.s3_client.list_objects_v2(Bucket=reader.bucket, Prefix=folder, MaxKeys=1)
    first = [item["Key"] for item in listed.get("Contents") or ()]
    if not first:
        return False  # emptied since it was listed
    try:
        reader.read(first[0])
    except ForeignMessageError:
        skipped.append(folder)
        return False
    except MalformedMessageError as error:
        notes.append(
            f"{folder} is kept among this consumer's mappings: its first object cannot be read"
            f" to say whose it is ({error})"
        )
    return True
