"""What the local command-line tools (``cdc-local``, ``cdc-backfill``) share, so the same option
is spelled, defaulted and explained the same way in each: ``--assembly`` and ``--stack`` (the
stack inferred when the assembly has one), ``--consumer-name``, ``--endpoint-url``, and a
``--help`` whose description is the whole first paragraph of the tool's docstring (never a
sentence cut at its first line)."""

from __future__ import annotations

import argparse
import re
import textwrap

from cdc_local.assembly import CloudAssembly
from cdc_local.exceptions import AssemblyError

__all__ = [
    "add_assembly_arguments",
    "add_consumer_name_argument",
    "add_endpoint_url_argument",
    "description",
    "stack_to_run",
]

DEFAULT_ASSEMBLY = "cdk.out"


def description(docstring: str | None) -> str:
    """The docstring's first paragraph as plain text (reST ``literals`` unquoted), wrapped for a
    terminal (the parsers keep their epilogs' line breaks, so they do not wrap it)."""
    first = (docstring or "").strip().split("\n\n")[0]
    return textwrap.fill(re.sub(r"``([^`]+)``", r"\1", " ".join(first.split())), width=79)


def add_assembly_arguments(parser: argparse.ArgumentParser, *, several: bool = False) -> None:
    """``--assembly`` and ``--stack``, as every local tool takes them; with ``several``,
    ``--stack`` may be given once per stack (a list, None when not given)."""
    parser.add_argument(
        "--assembly",
        default=DEFAULT_ASSEMBLY,
        metavar="DIR",
        help=f"the cloud assembly `cdk synth` wrote (default: {DEFAULT_ASSEMBLY})",
    )
    what = "the stack to run (default: the assembly's only stack; required when it has several)"
    if several:
        what += (
            "; once per stack to run several on one endpoint (a global table's stack first, "
            "then the stacks reading its replicas)"
        )
    parser.add_argument(
        "--stack",
        default=None,
        action="append" if several else "store",
        metavar="NAME",
        help=what,
    )


def add_consumer_name_argument(parser: argparse.ArgumentParser, what: str) -> None:
    """``--consumer-name`` (``--consumer`` too, its former spelling), as cdc-redrive spells it."""
    parser.add_argument(
        "--consumer-name",
        "--consumer",
        dest="consumer",
        default=None,
        metavar="NAME",
        help=what,
    )


def add_endpoint_url_argument(parser: argparse.ArgumentParser) -> None:
    """``--endpoint-url``, as cdc-redrive and the AWS CLI spell it."""
    parser.add_argument(
        "--endpoint-url",
        default=None,
        metavar="URL",
        help="the AWS endpoint to call, e.g. a local emulator's (default: $AWS_ENDPOINT_URL, "
        "else AWS)",
    )


def stack_to_run(assembly: str, stack: str | None) -> str:
    """``stack``, or the assembly's only stack when none is named."""
    if stack is not None:
        return stack
    names = CloudAssembly(assembly).stack_names()
    if len(names) != 1:
        raise AssemblyError(
            f"the cloud assembly {assembly} has {len(names)} stacks "
            f"({', '.join(names) or 'none'}): name the one to run with --stack"
        )
    return names[0]
