"""``cdc-local`` (also ``python -m cdc_local``): run a synthesized stack's stream consumers on
this machine, against moto's server on 127.0.0.1, with no AWS account.

    cdk synth && cdc-local --assembly cdk.out --stack ShopStack

It prints the local endpoint, the stack's resources and, for each consumer, the command line
that redrives it; then it runs the consumers (and the TTL sweeper every ``--ttl-every``
seconds) until interrupted, so an application pointed at the endpoint sees its changes flow.
Credentials and region: the pipeline's own clients and the handlers it runs use the local
endpoint's (fixed fake ones); an application of yours needs the variables it prints
(docs/local.md). Any app's stack runs: nothing here knows the repository's example.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence

from cdc_consumer.exceptions import FilterPatternError
from rich.console import Console

from cdc_local.assembly import CloudAssembly
from cdc_local.exceptions import AssemblyError, LocalPipelineError
from cdc_local.runner import LocalPipeline
from cdc_local.serve_info import serve_lines

#: The console script's name (pyproject.toml [project.scripts]): what usage and errors call it.
PROG = "cdc-local"


def build_parser(prog: str = PROG) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n")[0])
    parser.add_argument("--assembly", default="cdk.out", help="cloud assembly directory (cdk.out)")
    parser.add_argument(
        "--stack", default=None, help="stack to run (default: the assembly's only stack)"
    )
    parser.add_argument(
        "--ttl-every", type=float, default=5.0, help="seconds between TTL sweeps (default 5)"
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


def main(argv: Sequence[str] | None = None) -> int:
    arguments = parse_arguments(argv)
    console = Console(stderr=True)
    try:
        stack = stack_to_run(arguments.assembly, arguments.stack)
        return serve(arguments.assembly, stack, arguments.ttl_every, not arguments.no_iam)
    except (LocalPipelineError, FilterPatternError) as error:
        console.print(f"{PROG}: error: {error}", style="red", markup=False, soft_wrap=True)
        return 2


def serve(assembly: str, stack: str, ttl_every: float, enforce_iam: bool = True) -> int:
    with LocalPipeline(assembly, stack, capture_output=False, enforce_iam=enforce_iam) as pipeline:
        # Plain lines on stdout, never wrapped: URLs, ARNs and the redrive command lines must
        # survive a pipe or a log file whole, to be copied as they are.
        for line in serve_lines(pipeline):
            print(line, flush=True)
        last_sweep = time.monotonic()
        try:
            while True:
                if not pipeline.poll():
                    time.sleep(0.25)  # Lambda polls a shard about 4 times a second
                if time.monotonic() - last_sweep >= ttl_every:
                    pipeline.sweep_ttl()
                    last_sweep = time.monotonic()
        except KeyboardInterrupt:
            print(json.dumps(pipeline.counters.as_dict()), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
