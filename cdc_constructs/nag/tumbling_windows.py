"""CDC-ESM14 and CDC-ESM15: a mapping's tumbling window (``TumblingWindowInSeconds``), which makes
Lambda name each event's shard, and so lets the runtime keep one ledger lane per shard
(docs/design.md §12, "Tumbling windows: the evidence").

- CDC-ESM14: a window beside a ``ParallelizationFactor`` above 1, which CreateEventSourceMapping
  refuses ("Parallelization factor must be equal to 1 when tumbling window period is
  configured"): found at synth rather than as a failed deployment.
- CDC-ESM15 (warning): a DynamoDB stream consumer running this library's runtime with a ledger
  table (``CDC_LEDGER_TABLE_NAME``) whose mapping has no window: its events name no shard, so
  the runtime keeps per-record markers, at their price.
"""

from __future__ import annotations

from aws_cdk import CfnResource
from cdc_consumer.environment_variables import LEDGER_TABLE_ENV
from cdk_nag import NagRuleCompliance, NagRules

from cdc_constructs.nag.marker_windows import runtime_variables
from cdc_constructs.nag.stream_source import StreamSource, dig

__all__ = ["ledger_without_window", "window_beside_parallelization", "window_cost"]


def _number(node: CfnResource, value: object, default: int) -> int:
    return default if value is None else int(NagRules.resolve_if_primitive(node, value))


def _window_and_factor(node: CfnResource, source: StreamSource) -> tuple[int, int]:
    window = _number(node, dig(source.settings, "TumblingWindowInSeconds"), 0)
    return window, _number(node, dig(source.settings, "ParallelizationFactor"), 1)


def window_beside_parallelization(node: CfnResource, source: StreamSource) -> NagRuleCompliance:
    """A mapping with a tumbling window has a parallelization factor of 1. Not applicable to
    pipes (they have no window)."""
    if source.is_pipe:
        return NagRuleCompliance.NOT_APPLICABLE
    window, factor = _window_and_factor(node, source)
    if window and factor > 1:
        return NagRuleCompliance.NON_COMPLIANT
    return NagRuleCompliance.COMPLIANT


def ledger_without_window(node: CfnResource, source: StreamSource) -> NagRuleCompliance:
    """A DynamoDB stream mapping whose function runs the runtime with a ledger table has a
    tumbling window. Not applicable to pipes, Kinesis sources (their runtime keeps markers by
    design) and functions without a ledger table (markers by choice)."""
    if source.is_pipe or not source.reads_table_stream:
        return NagRuleCompliance.NOT_APPLICABLE
    variables = runtime_variables(source, node)
    if variables is None or LEDGER_TABLE_ENV not in variables:
        return NagRuleCompliance.NOT_APPLICABLE
    window, _ = _window_and_factor(node, source)
    return NagRuleCompliance.COMPLIANT if window else NagRuleCompliance.NON_COMPLIANT


def window_cost(node: CfnResource, source: StreamSource) -> str | None:
    """Why a ledger consumer's mapping has no window, and what that costs."""
    window, factor = _window_and_factor(node, source)
    if window:
        return None
    why = (
        f"its ParallelizationFactor is {factor}, and AWS refuses a tumbling window beside a "
        "factor above 1"
        if factor > 1
        else "its TumblingWindowInSeconds is 0 (turned off)"
    )
    return (
        f"This consumer has a ledger table but no tumbling window ({why}): its events name no "
        "shard, so the runtime keeps per-record markers, 2 write units per record in a "
        "transaction instead of about one ledger entry per transaction."
    )
