"""CdcChecks: the cdk-nag (3.x) rule pack for stream consumers.

Register it like any cdk-nag 3 pack; it is a policy validation plugin that CDK runs after
synthesis and whose findings appear in the validation report (printed by ``cdk synth`` and
written to ``validation-report.json`` in the cloud assembly)::

    Validations.of(app).add_plugins(CdcChecks())

Acknowledge a finding on the consumer (or any construct above it) with its reason::

    Validations.of(mapping).acknowledge(
        Acknowledgment(id="CDC-ESM6", reason="only changes made after go-live matter")
    )
"""

from __future__ import annotations

from dataclasses import replace
from typing import cast

import jsii
from aws_cdk import CfnResource, PolicyValidationPluginReport
from cdk_nag import IApplyRule, NagMessageLevel, NagPack, NagRuleCompliance
from constructs import IConstruct

from cdc_constructs.nag.backfill_machine import STATE_MACHINE, BackfillMachine
from cdc_constructs.nag.backfill_rules import BACKFILL_RULES
from cdc_constructs.nag.readers import AppStreamReaders
from cdc_constructs.nag.rules import PACK_NAME, RULES, CdcRule
from cdc_constructs.nag.stream_source import EVENT_SOURCE_MAPPING, PIPE, StreamSource
from cdc_constructs.nag.summary import CheckedCounts, print_summary
from cdc_constructs.nag.template import TemplateCache, logical_id

PLUGIN_NAME = "CdcChecks"
"""The plugin's name in the validation report; CDK also accepts ``CdcChecks::CDC-ESM1`` ids."""


@jsii.implements(IApplyRule)
class _RuleApplication:
    """One rule applied to one consumer, in the shape cdk-nag's ``applyRule`` takes.

    jsii reads these members by name, so each is a class-level property, not an attribute.
    """

    def __init__(
        self, rule: CdcRule, node: CfnResource, source: StreamSource | BackfillMachine
    ) -> None:
        self._rule = rule
        self._node = node
        self._source = source

    @property
    def rule_suffix_override(self) -> str:
        return self._rule.suffix

    @property
    def info(self) -> str:
        detail = self._rule.describe(self._node, self._source) if self._rule.describe else None
        return f"{detail} {self._rule.info}" if detail else self._rule.info

    @property
    def explanation(self) -> str:
        return self._rule.explanation

    @property
    def level(self) -> NagMessageLevel:
        return self._rule.level

    @property
    def node(self) -> CfnResource:
        return self._node

    def rule(self, node: CfnResource) -> NagRuleCompliance:
        return self._rule.check(node, self._source)


class CdcChecks(NagPack):
    """Checks every Lambda event source mapping and EventBridge Pipe that reads a DynamoDB or
    Kinesis stream for the settings a safe consumer needs (see ``RULES``):

    - CDC-ESM1 finite MaximumRetryAttempts
    - CDC-ESM2 MaximumRecordAgeInSeconds set and below the stream's retention
    - CDC-ESM3 bisect on error (pipe: OnPartialBatchItemFailure AUTOMATIC_BISECT)
    - CDC-ESM4 an on-failure destination (pipe: DeadLetterConfig)
    - CDC-ESM5 ReportBatchItemFailures (event source mappings)
    - CDC-ESM6 StartingPosition TRIM_HORIZON (warning)
    - CDC-ESM7 filters only on images the table's StreamViewType carries
    - CDC-ESM8 an IteratorAge alarm on the consumer function (warning)
    - CDC-ESM9 the runtime's markers outlive every replay window (stream, record age, failed-batch
      bucket, quarantine queue)
    - CDC-ESM10 an on-failure destination that keeps the records (S3), not a pointer (warning)
    - CDC-ESM11 at most two readers (mappings and pipes, across stacks) per DynamoDB stream,
      one when the table has replicas
    - CDC-ESM12 filters name only fields and attribute types the records have, at every
      level whose shape is known, and give rules to values only
    - CDC-ESM13 no filter on the TTL identity (userIdentity) on a table with replicas
    - CDC-ESM14 no tumbling window beside a ParallelizationFactor above 1 (AWS refuses it)
    - CDC-ESM15 a consumer with a ledger table has a tumbling window, else its price
      (per-record markers, 2 write units a record) is reported (warning)

    and every Step Functions state machine that runs the runtime's backfill handler over a
    Map (``ViewBackfill``'s, or one made by hand):

    - CDC-BF1 an alarm on its failed executions
    - CDC-BF2 the Map's MaxConcurrency set
    - CDC-BF3 the segment function paced (CDC_BACKFILL_ITEMS_PER_SECOND) (warning)

    Each run prints one line to standard error, clean or not: what it checked, its
    unacknowledged findings and how many findings the app acknowledges; with the context
    ``-c cdcNagVerbose=true`` each acknowledgement follows with its reason
    (:mod:`cdc_constructs.nag.summary`).

    It judges the synthesized templates (escape-hatch overrides included), so it runs as a
    validation plugin during synthesis; ``validate_scope`` on an unsynthesized app raises a
    ``RuntimeError`` saying so (a ``CdcChecksError`` re-raised by jsii). A table, stream,
    function or alarm is recognised when it is in the consumer's own template; a value known
    only at deployment (a parameter or an import) is reported under the rule that needs it.

    Args:
        scope: the app; needed only with ``write_suppressions_to_cloud_formation``.
        verbose: put each rule's explanation (what to change) in the report, not just its
            cause. Default True: an audit is read to be acted on. cdk-nag's packs default
            to False.
        write_suppressions_to_cloud_formation: also write acknowledgements into each
            resource's ``cdk_nag`` metadata (cdk-nag v2's format). Default False, as in cdk-nag.
    """

    def __init__(
        self,
        scope: IConstruct | None = None,
        *,
        verbose: bool = True,
        write_suppressions_to_cloud_formation: bool = False,
    ) -> None:
        super().__init__(
            scope,
            verbose=verbose,
            write_suppressions_to_cloud_formation=write_suppressions_to_cloud_formation,
        )
        self._pack_name = PACK_NAME
        self._templates = TemplateCache()
        self._readers: AppStreamReaders | None = None
        self._checked = CheckedCounts()

    @property
    def name(self) -> str:
        return PLUGIN_NAME

    @property
    def rule_ids(self) -> list[str]:
        return [rule.rule_id for rule in (*RULES, *BACKFILL_RULES)]

    def validate_scope(self, scope: IConstruct) -> PolicyValidationPluginReport:
        # Each run reads the templates afresh: the app may have been synthesized again.
        self._templates = TemplateCache()
        self._readers = None
        self._checked = CheckedCounts()
        report = super().validate_scope(scope)
        findings = sum(len(v.violating_resources) or 1 for v in report.violations)
        print_summary(scope, self._checked, findings)
        return report

    def _check_resource(self, node: CfnResource) -> None:
        if node.cfn_resource_type == STATE_MACHINE:
            self._check_backfill(node)
            return
        if node.cfn_resource_type not in (EVENT_SOURCE_MAPPING, PIPE):
            return
        resources = self._templates.resources_of(node)
        resource = resources.get(logical_id(node))
        if resource is None:  # not in the template, so not deployed
            return
        source = StreamSource.read(node, resource.get("Properties") or {}, resources)
        if source is None:
            return
        if self._readers is None:
            self._readers = AppStreamReaders.of(node)
        source = replace(source, readers=self._readers)
        self._checked.stream_readers += 1
        for rule in RULES:
            # The protocol declares its members settable; cdk-nag only reads them.
            self._apply_rule(cast(IApplyRule, _RuleApplication(rule, node, source)))

    def _check_backfill(self, node: CfnResource) -> None:
        resources = self._templates.resources_of(node)
        resource = resources.get(logical_id(node))
        if resource is None:
            return
        machine = BackfillMachine.read(
            logical_id(node), resource.get("Properties") or {}, resources
        )
        if machine is None:
            return
        self._checked.backfill_machines += 1
        for rule in BACKFILL_RULES:
            self._apply_rule(cast(IApplyRule, _RuleApplication(rule, node, machine)))
