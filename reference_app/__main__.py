"""``python -m reference_app``: the orders example's demo (``make local``): its pipeline run on
this machine (the library's local pipeline, cdc_local) under a workload with injected faults;
prints a summary table and one JSON line, and exits 0 only if no change was lost and the view
reconciles.

    cdk synth && python -m reference_app --assembly cdk.out --stack CdcReferenceStack

A stack whose table streams to Kinesis (CdcKinesisReferenceStack) runs the Kinesis route's
demo. The demo is the example's, not the library's: the library's ``cdc-local`` runs any
app's consumers and knows nothing of this workload.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from cdc_consumer.exceptions import FilterPatternError
from rich.console import Console

from cdc_local.assembly import CloudAssembly
from cdc_local.exceptions import LocalPipelineError
from cdc_local.routes.kinesis import kinesis_destinations
from reference_app.demo import DEMO_FAULTS, run_demo
from reference_app.kinesis_demo import KINESIS_FAULTS, run_kinesis_demo
from reference_app.workload import OrderWorkload


def parse_arguments(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m reference_app", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--assembly", default="cdk.out", help="cloud assembly directory (cdk.out)")
    parser.add_argument("--stack", default="CdcReferenceStack", help="stack to run")
    parser.add_argument("--changes", type=int, default=2000, help="changes to write")
    parser.add_argument("--orders", type=int, default=100, help="orders")
    parser.add_argument("--poison", type=int, default=3, help="poison writes")
    parser.add_argument("--seed", type=int, default=0, help="workload seed")
    parser.add_argument("--no-faults", action="store_true", help="inject no faults")
    parser.add_argument(
        "--no-iam",
        action="store_true",
        help="run every function with the endpoint's credentials, not its own role's, without "
        "IAM enforcement (faster; AWS would still refuse what a role lacks)",
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    arguments = parse_arguments(argv)
    console = Console(stderr=True)
    try:
        stack = CloudAssembly(arguments.assembly).stack(arguments.stack)
        kinesis = bool(kinesis_destinations(stack))
        demo, faults = (run_kinesis_demo, KINESIS_FAULTS) if kinesis else (run_demo, DEMO_FAULTS)
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
    except (LocalPipelineError, FilterPatternError) as error:
        console.print(f"error: {error}", style="red", markup=False, soft_wrap=True)
        return 2


if __name__ == "__main__":
    sys.exit(main())
