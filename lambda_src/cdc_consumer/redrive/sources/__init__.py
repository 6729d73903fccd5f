"""Failure sources: one module per place a redrive replays from, each a
:class:`~cdc_consumer.redrive.failure_source.FailureSource` for the one driver, found by a
lookup on what the run names (never an ``if`` on the kind):

- :mod:`~cdc_consumer.redrive.sources.bucket`: an S3 on-failure destination
  (``s3://bucket/prefix``; ``ON_FAILURE_BUCKET_NAME``), each object the batch itself;
- :mod:`~cdc_consumer.redrive.sources.queue`: an SQS on-failure queue (its URL;
  ``ON_FAILURE_QUEUE_URL``), each message a pointer read back from the stream;
- :mod:`~cdc_consumer.redrive.sources.quarantine`: the quarantine queue (its URL;
  ``QUARANTINE_QUEUE_URL``), each message a record.

Each module's kind says which ``--source`` it serves (``role``), whether it claims a location,
how to find its location in the redrive function's environment, how to check it before a run,
and how to open it for one. The same names are the construct side's (``cdc_constructs.
failure_kinds``) and the local pipeline's (``cdc_local.destinations``); docs/design.md,
"Adding a failure destination". :func:`register` adds a kind defined elsewhere;
:func:`import_modules` imports the modules that register such kinds (the redrive function's
``CDC_REDRIVE_SOURCE_MODULES``, ``cdc-redrive --source-module``).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from cdc_consumer.environment_variables import REDRIVE_SOURCE_MODULES_ENV
from cdc_consumer.exceptions import RedriveSetupError
from cdc_consumer.redrive.failure_source import FailureSource
from cdc_consumer.redrive.messages import Source
from cdc_consumer.redrive.parts import Run
from cdc_consumer.redrive.sources.bucket import BUCKET, bucket_where, split_bucket_where
from cdc_consumer.redrive.sources.quarantine import QUARANTINE
from cdc_consumer.redrive.sources.queue import QUEUE
from cdc_consumer.redrive_shapes import ON_FAILURE_S3_PREFIX

__all__ = [
    "SOURCE_KINDS",
    "SourceKind",
    "bucket_where",
    "import_modules",
    "kind_for",
    "located",
    "modules_of",
    "on_failure_bucket",
    "register",
    "unregister",
]


class SourceKind(Protocol):
    """How one kind of failure source is found, checked and opened (for either route: a source
    reads records through the run's route, :attr:`~cdc_consumer.redrive.parts.Run.route`). A
    kind may say what its locations look like (``shape``, for the error naming every kind)."""

    role: Source

    def claims(self, where: str) -> bool:
        """Whether ``where`` (a URL the run names) is a location of this kind."""
        ...

    def located(self, environ: Mapping[str, str]) -> str | None:
        """Its location in the redrive function's environment (None: the consumer has none)."""
        ...

    def check(self, redrive: Any, where: str) -> None:
        """Raise :class:`RedriveSetupError` for an operator mistake, touching nothing."""
        ...

    def open(self, run: Run, where: str) -> FailureSource:
        """The source for one run."""
        ...


SOURCE_KINDS: list[SourceKind] = [BUCKET, QUEUE, QUARANTINE]
"""The kinds, asked in this order (the first that claims a location has it)."""


def register(kind: SourceKind) -> None:
    """Add ``kind`` ahead of the others (a kind defined outside this package)."""
    if kind not in SOURCE_KINDS:
        SOURCE_KINDS.insert(0, kind)


def unregister(kind: SourceKind) -> None:
    """Remove a kind :func:`register` added."""
    if kind in SOURCE_KINDS:
        SOURCE_KINDS.remove(kind)


def modules_of(environ: Mapping[str, str]) -> list[str]:
    """The modules ``CDC_REDRIVE_SOURCE_MODULES`` names (none when unset)."""
    return [m.strip() for m in environ.get(REDRIVE_SOURCE_MODULES_ENV, "").split(",") if m.strip()]


def import_modules(names: Iterable[str]) -> None:
    """Import each module of ``names``: importing one registers the failure source kind it
    defines (:func:`register`). A module that cannot be imported is an operator's mistake."""
    for name in names:
        try:
            importlib.import_module(name)
        except ImportError as error:
            raise RedriveSetupError(
                f"failure source module {name!r} cannot be imported ({error}): it must be on "
                "the redrive's path (the redrive function's layers; PYTHONPATH for cdc-redrive)"
            ) from None


def kind_for(source: Source, where: str) -> SourceKind:
    """The kind serving ``source`` that claims ``where``; :class:`RedriveSetupError` naming
    ``where`` and the locations the kinds serving ``source`` read, when none claims it."""
    for kind in SOURCE_KINDS:
        if kind.role is source and kind.claims(where):
            return kind
    shapes = [getattr(k, "shape", type(k).__name__) for k in SOURCE_KINDS if k.role is source]
    raise RedriveSetupError(
        f"{where!r} is not a location a {source.value} redrive reads; expected one of:"
        f" {'; '.join(shapes)} (a kind from outside: --source-module, CDC_REDRIVE_SOURCE_MODULES)"
    )


def located(source: Source, environ: Mapping[str, str]) -> str | None:
    """Where the redrive function's environment says ``source`` is (None: nowhere)."""
    for kind in SOURCE_KINDS:
        if kind.role is source:
            where = kind.located(environ)
            if where:
                return where
    return None


def on_failure_bucket(environ: Mapping[str, str]) -> tuple[str | None, str]:
    """The failed-batch bucket and prefix in the redrive function's environment (None: the
    destination is not a bucket), where a quarantine run looks for an earlier change of an
    item (:mod:`~cdc_consumer.redrive.cross_source`)."""
    where = BUCKET.located(environ)
    return split_bucket_where(where) if where else (None, ON_FAILURE_S3_PREFIX)
