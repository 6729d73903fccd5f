"""``python -m cdc_local``: run a synthesized stack's stream consumers on this machine.

    python -m cdc_local --assembly cdk.out --stack CdcReferenceStack --demo

``--demo`` runs the reference stack under the demo workload (see :mod:`reference_app.demo`,
the orders example beside app.py in a checkout) and
exits 0 only if no change was lost and the view reconciles. Without it, the pipeline serves:
it prints the local endpoint and the stack's resources, then runs the consumers (and the TTL
sweeper every ``--ttl-every`` seconds) until interrupted, so an application pointed at the
endpoint (``AWS_ENDPOINT_URL``) sees its changes flow.
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
from cdc_local.exceptions import LocalPipelineError
from cdc_local.kinesis import kinesis_destinations
from cdc_local.runner import LocalPipeline
from cdc_local.serve_info import serve_lines


def parse_arguments(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m cdc_local", description=__doc__.split("\n")[0])
    parser.add_argument("--assembly", default="cdk.out", help="cloud assembly directory (cdk.out)")
    parser.add_argument("--stack", default="CdcReferenceStack", help="stack to run")
    parser.add_argument("--demo", action="store_true", help="run the demo workload and exit")
    parser.add_argument("--changes", type=int, default=2000, help="demo: changes to write")
    parser.add_argument("--orders", type=int, default=100, help="demo: orders")
    parser.add_argument("--poison", type=int, default=3, help="demo: poison writes")
    parser.add_argument("--seed", type=int, default=0, help="demo: workload seed")
    parser.add_argument("--no-faults", action="store_true", help="demo: inject no faults")
    parser.add_argument(
        "--no-iam",
        action="store_true",
        help="run every function with the endpoint's credentials instead of its own role's, "
        "without IAM enforcement (faster; AWS would still refuse what a role lacks)",
    )
    parser.add_argument(
        "--ttl-every", type=float, default=5.0, help="serve: seconds between TTL sweeps"
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    arguments = parse_arguments(argv)
    console = Console(stderr=True)
    try:
        if arguments.demo:
            # The demo is the orders example's (reference_app/, beside app.py): imported only
            # here, so the local pipeline itself runs any stack without it.
            from reference_app.demo import DEMO_FAULTS, run_demo
            from reference_app.kinesis_demo import KINESIS_FAULTS, run_kinesis_demo
            from reference_app.workload import OrderWorkload

            # A stack whose table streams to Kinesis runs the Kinesis route's demo.
            kinesis = bool(
                kinesis_destinations(CloudAssembly(arguments.assembly).stack(arguments.stack))
            )
            demo, faults = (
                (run_kinesis_demo, KINESIS_FAULTS) if kinesis else (run_demo, DEMO_FAULTS)
            )
            summary = demo(
                arguments.assembly,
                arguments.stack,
                workload=OrderWorkload(
                    changes=arguments.changes,
                    orders=arguments.orders,
                    poison=arguments.poison,
                    seed=arguments.seed,
                ),
                faults=None if arguments.no_faults else faults,
                console=console,
                enforce_iam=not arguments.no_iam,
            )
            return 0 if summary.ok else 1
        return serve(
            arguments.assembly, arguments.stack, arguments.ttl_every, console, not arguments.no_iam
        )
    except (LocalPipelineError, FilterPatternError) as error:
        console.print(f"error: {error}", style="red", markup=False, soft_wrap=True)
        return 2


def serve(
    assembly: str, stack: str, ttl_every: float, console: Console, enforce_iam: bool = True
) -> int:
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
