"""``make deploy-local``: the reference stack deployed with the real CDK CLI to MiniStack, a local
AWS emulator, and exercised end to end (docs/deploy-local.md).

A development tool beside the library, like ``cdc_local`` and ``bench``: not shipped in the
wheel. Start with :func:`run` (or ``python -m deploy_local``)::

    summary = run(Options())
    print(summary.table())
"""

from deploy_local.deployed_stack import DeployedStack, OrderStatsWiring
from deploy_local.emulator import Emulator
from deploy_local.emulator_venv import EmulatorVenv
from deploy_local.exceptions import DeployLocalError, StepFailed
from deploy_local.flow import Options, run
from deploy_local.summary import Summary

__all__ = [
    "DeployLocalError",
    "DeployedStack",
    "Emulator",
    "EmulatorVenv",
    "Options",
    "OrderStatsWiring",
    "StepFailed",
    "Summary",
    "run",
]
