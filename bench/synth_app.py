"""One synthesis in this (fresh) process: ``python -m bench.synth_app <stack> <outdir>``.

``<stack>`` is ``reference`` (cdc-constructs' CdcReferenceStack), ``reference+nag`` (the same
with the cdk-nag packs, as app.py and `make synth` build it) or ``solutions`` (a minimal AWS
Solutions Constructs ``DynamoDBStreamsToLambda`` stack with the same handler code asset). Prints
one JSON line: seconds spent importing, constructing and synthesizing, and the template's
resource and alarm counts. bench/synth.py runs it in a new interpreter per measurement, because
`cdk synth` runs the app in a new process too (and jsii's Node process starts with it).
"""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
HANDLERS = REPO / "reference_app" / "handlers"


#: Event source mapping settings shown side by side (the ones docs/design.md §1 is about).
_ESM_SETTINGS = (
    "StartingPosition",
    "BatchSize",
    "MaximumRetryAttempts",
    "MaximumRecordAgeInSeconds",
    "BisectBatchOnFunctionError",
    "FunctionResponseTypes",
    "DestinationConfig",
)


def _reference(app: Any) -> Any:
    """CdcReferenceStack, the orders example (no cdk-nag packs)."""
    sys.path.insert(0, str(REPO))
    from reference_app.stack import CdcReferenceStack

    return CdcReferenceStack(app, "CdcReferenceStack")


def _reference_with_nag(app: Any) -> Any:
    """The reference app as `make synth` builds it: the stack plus the cdk-nag packs."""
    sys.path.insert(0, str(REPO))
    from app import STACK_NAME, build_app

    build_app(app)
    return app.node.find_child(STACK_NAME)


def _solutions(app: Any) -> Any:
    import aws_cdk as cdk
    from aws_cdk import aws_lambda as lambda_
    from aws_solutions_constructs.aws_dynamodbstreams_lambda import DynamoDBStreamsToLambda

    stack = cdk.Stack(app, "SolutionsConstructsStack")
    DynamoDBStreamsToLambda(
        stack,
        "OrdersToOrderStats",
        lambda_function_props=lambda_.FunctionProps(
            runtime=lambda_.Runtime.PYTHON_3_12,
            handler="order_stats.handler",
            code=lambda_.Code.from_asset(str(HANDLERS)),
        ),
    )
    return stack


def main(which: str, outdir: str) -> dict[str, Any]:
    started = time.perf_counter()
    import aws_cdk as cdk

    imported = time.perf_counter()
    app = cdk.App(outdir=outdir)
    builders = {
        "reference": _reference,
        "reference+nag": _reference_with_nag,
        "solutions": _solutions,
    }
    stack = builders[which](app)
    constructed = time.perf_counter()
    assembly = app.synth()
    synthesized = time.perf_counter()
    template = assembly.get_stack_by_name(stack.stack_name).template
    resources = template.get("Resources", {}).values()
    types = Counter(resource["Type"] for resource in resources)
    mappings = [
        {name: r["Properties"].get(name) for name in _ESM_SETTINGS}
        for r in resources
        if r["Type"] == "AWS::Lambda::EventSourceMapping"
    ]
    return {
        "stack": stack.stack_name,
        "import_s": round(imported - started, 3),
        "construct_s": round(constructed - imported, 3),
        "synth_s": round(synthesized - constructed, 3),
        "resources": sum(types.values()),
        "alarms": types.get("AWS::CloudWatch::Alarm", 0),
        "resource_types": dict(sorted(types.items())),
        "event_source_mappings": mappings,
    }


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], sys.argv[2])))
