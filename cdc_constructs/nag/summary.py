"""The one line CdcChecks prints at every synthesis, clean or not, so an app can tell the rule
pack ran: what it checked, its unacknowledged findings, and how many cdk-nag findings the app
acknowledges; with the context ``-c cdcNagVerbose=true``, each acknowledgement follows with its
reason.

CDK drops acknowledged findings before a plugin's report is written, so the acknowledgements
are read from the construct tree (the metadata ``Validations.acknowledge`` leaves), for every
pack, not only CdcChecks'.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import TextIO

from aws_cdk import Validations
from constructs import IConstruct

__all__ = [
    "VERBOSE_CONTEXT",
    "CheckedCounts",
    "acknowledgements",
    "format_summary",
    "print_summary",
]

VERBOSE_CONTEXT = "cdcNagVerbose"
"""The context key (``-c cdcNagVerbose=true``) that lists every acknowledgement with its
reason after the summary line."""


@dataclass
class CheckedCounts:
    """What one CdcChecks run looked at."""

    stream_readers: int = 0
    backfill_machines: int = 0


def acknowledgements(scope: IConstruct) -> list[tuple[str, str, str]]:
    """Every cdk-nag acknowledgement under ``scope``: (construct path, rule, reason)."""
    found = []
    for construct in scope.node.find_all():
        for entry in construct.node.metadata:
            if entry.type == Validations.ACKNOWLEDGED_RULES_METADATA_KEY:
                for rule, reason in entry.data.items():
                    found.append((construct.node.path, _rule_id(rule), reason))
    return found


def _rule_id(key: str) -> str:
    """``AwsSolutions-IAM5[Resource::...]`` from ``Annotation::AwsSolutions-IAM5[Resource::...]``:
    the namespace CDK prefixes, not the ``::`` inside a finding id."""
    namespace, separator, rest = key.partition("::")
    return rest if separator and "[" not in namespace else key


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def format_summary(
    checked: CheckedCounts,
    findings: int,
    acks: list[tuple[str, str, str]],
    *,
    verbose: bool = False,
) -> str:
    """One line; ``verbose`` adds each acknowledgement after it (rule, construct, reason)."""
    head = (
        f"CdcChecks: {_plural(checked.stream_readers, 'stream reader')} and "
        f"{_plural(checked.backfill_machines, 'backfill state machine')} checked, "
        f"{_plural(findings, 'unacknowledged finding')}; the app acknowledges "
        f"{_plural(len(acks), 'cdk-nag finding')}"
    )
    if not verbose:
        return f"{head} (each with its reason: -c {VERBOSE_CONTEXT}=true)"
    lines = [f"{head}:"] + [f"  - {rule} on {path}: {reason}" for path, rule, reason in acks]
    return "\n".join(lines)


def print_summary(
    scope: IConstruct, checked: CheckedCounts, findings: int, stream: TextIO | None = None
) -> None:
    """Print the summary of a run over ``scope`` to ``stream`` (standard error by default: it is
    a diagnostic, and ``cdk synth`` prints the template on standard output)."""
    verbose = str(scope.node.try_get_context(VERBOSE_CONTEXT)).lower() == "true"
    line = format_summary(checked, findings, acknowledgements(scope), verbose=verbose)
    print(line, file=stream or sys.stderr, flush=True)
