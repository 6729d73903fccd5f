"""``cdc-local`` (also ``python -m cdc_local``): run a synthesized stack's stream consumers on
this machine, against moto's server on 127.0.0.1, with no AWS account.

    cdk synth && cdc-local --assembly cdk.out --stack ShopStack

It prints the local endpoint, the stack's resources and, for each consumer, the command line
that redrives it; then it runs the consumers (and the TTL sweeper every ``--ttl-every``
seconds) until interrupted, so an application pointed at the endpoint sees its changes flow.
Credentials and region: the pipeline's own clients and the handlers it runs use the local
endpoint's (fixed fake ones); an application of yours needs the variables it prints
(docs/local.md). Any app's stack runs: nothing here knows the repository's example. Several
stacks run on one endpoint with ``--stack`` once per stack (a global table's stack first, then
the stacks reading its replicas in their regions).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from contextlib import ExitStack

from cdc_consumer.exceptions import FilterPatternError
from cdc_consumer.redrive.interrupts import sigterm_as_keyboard_interrupt
from rich.console import Console

from cdc_local.command_line import add_assembly_arguments, description, stack_to_run
from cdc_local.exceptions import LocalPipelineError
from cdc_local.runner import LocalPipeline
from cdc_local.serve_info import serve_lines

__all__ = ["PROG", "build_parser", "main", "parse_arguments", "serve", "stack_to_run"]

#: The console script's name (pyproject.toml [project.scripts]): what usage and errors call it.
PROG = "cdc-local"

_EPILOG = """\
examples:
  cdk synth && cdc-local --assembly cdk.out --stack ShopStack
  cdc-local --assembly cdk.out --stack GlobalOrdersEast --stack GlobalOrdersWest

output: the endpoint, the stack's resources and each consumer's redrive command on stdout, then
one JSON line of counters per stack when it stops; the handlers' logs and the tool's own messages on
stderr. Ctrl-C and SIGTERM stop it alike (the counters line, exit 0); exit 2: a mistake in the
command line or the assembly (one line says what)."""


def build_parser(prog: str = PROG) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog,
        description=description(__doc__),
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_assembly_arguments(parser, several=True)
    parser.add_argument(
        "--ttl-every",
        type=float,
        default=5.0,
        metavar="SECONDS",
        help="seconds between two runs of the TTL sweeper, which deletes expired items as "
        "DynamoDB's TTL does (default: 5)",
    )
    parser.add_argument(
        "--no-iam",
        action="store_true",
        help="run every function with the endpoint's credentials, not its own role's, without "
        "IAM enforcement (AWS would still refuse what a role lacks)",
    )
    return parser


def parse_arguments(argv: Sequence[str] | None = None) -> argparse.Namespace:
    return build_parser().parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    arguments = parse_arguments(argv)
    console = Console(stderr=True)
    sigterm_as_keyboard_interrupt()  # SIGTERM ends serve mode as Ctrl-C does
    try:
        stacks = arguments.stack or [stack_to_run(arguments.assembly, None)]
        return serve(arguments.assembly, stacks, arguments.ttl_every, not arguments.no_iam)
    except (LocalPipelineError, FilterPatternError) as error:
        console.print(f"{PROG}: error: {error}", style="red", markup=False, soft_wrap=True)
        return 2
    except KeyboardInterrupt:  # before the pipeline ran: nothing to count
        return 0


def serve(
    assembly: str, stacks: str | Sequence[str], ttl_every: float, enforce_iam: bool = True
) -> int:
    """Run until Ctrl-C or SIGTERM; the serve-mode facts and the final counters line go to
    stdout, the handlers' output to stderr (``capture_output=False`` with serve mode's
    pipeline), so a pipe of stdout holds only facts. Several ``stacks`` run on one endpoint, in
    the order given (a global table's replicas: docs/local.md), each in its own region."""
    names = [stacks] if isinstance(stacks, str) else list(stacks)
    with ExitStack() as running:
        pipelines: list[LocalPipeline] = []
        for name in names:
            endpoint = pipelines[0].endpoint if pipelines else None
            pipeline = LocalPipeline(
                assembly, name, endpoint, capture_output=False, enforce_iam=enforce_iam
            )
            pipelines.append(running.enter_context(pipeline))
        try:  # from here on, a stop (Ctrl-C, SIGTERM) ends with the counters line
            _serve(pipelines, ttl_every)
        except KeyboardInterrupt:
            for pipeline in pipelines:
                print(json.dumps(pipeline.counters.as_dict()), flush=True)
    return 0


def _serve(pipelines: list[LocalPipeline], ttl_every: float) -> None:
    # Plain lines on stdout, never wrapped: URLs, ARNs and the redrive command lines must
    # survive a pipe or a log file whole, to be copied as they are.
    for pipeline in pipelines:
        for line in serve_lines(pipeline):
            print(line, flush=True)
    last_sweep, shown = time.monotonic(), [0] * len(pipelines)
    while True:
        for index, pipeline in enumerate(pipelines):
            shown[index] = show_warnings(pipeline.warnings, shown[index])
        if not any([pipeline.poll() for pipeline in pipelines]):
            time.sleep(0.25)  # Lambda polls a shard about 4 times a second
        if time.monotonic() - last_sweep >= ttl_every:
            for pipeline in pipelines:
                pipeline.sweep_ttl()
            last_sweep = time.monotonic()


def show_warnings(warnings: list[str], shown: int) -> int:
    """Print the warnings after the first ``shown`` on stderr; how many are shown now."""
    for warning in warnings[shown:]:
        print(f"{PROG}: warning: {warning}", file=sys.stderr, flush=True)
    return len(warnings)


if __name__ == "__main__":
    sys.exit(main())
