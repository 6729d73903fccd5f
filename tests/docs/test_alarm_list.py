"""docs/operations.md's alarm table lists every alarm the reference stacks synthesize, by the
name their constructs give it (the key of its ``alarms`` dict), and nothing they do not make but
the alarms of an SQS on-failure destination, which the table says are for one."""

from __future__ import annotations

import re

import aws_cdk as cdk
import pytest
from aws_cdk import aws_cloudwatch as cloudwatch
from constructs import IConstruct

from reference_app.kinesis_stack import CdcKinesisReferenceStack
from reference_app.stack import CdcReferenceStack
from tests.docs.blocks import REPO_ROOT

OPERATIONS = REPO_ROOT / "docs" / "operations.md"
SQS_ONLY = {"OnFailureQueueDepth", "OnFailureQueueAge"}


def _name(alarm: cloudwatch.Alarm) -> str:
    """The name its construct gives the alarm: its key in the ``alarms`` dict of the nearest
    construct above that lists it (a member's runtime alarm without the member's name)."""
    for scope in reversed(alarm.node.scopes[:-1]):
        listed: dict[str, object] = getattr(scope, "alarms", None) or {}
        for name, made in listed.items():
            if made is alarm:
                return name.split("-")[0]
    raise AssertionError(f"{alarm.node.path} is in no construct's alarms")


@pytest.fixture(scope="module")
def synthesized(tmp_path_factory: pytest.TempPathFactory) -> dict[str, set[str]]:
    """Alarm name -> the construct paths of the reference stacks' alarms of that name, each
    checked to be in its stack's synthesized template."""
    app = cdk.App(outdir=str(tmp_path_factory.mktemp("alarms.out")))
    stacks = [CdcReferenceStack(app, "Reference"), CdcKinesisReferenceStack(app, "Kinesis")]
    assembly = app.synth()
    templates = {s.stack_name: assembly.get_stack_by_name(s.stack_name).template for s in stacks}
    found: dict[str, set[str]] = {}
    for construct in app.node.find_all():
        if isinstance(construct, cloudwatch.Alarm):
            stack = cdk.Stack.of(construct)
            resource: IConstruct = construct.node.default_child  # type: ignore[assignment]
            assert stack.get_logical_id(resource) in templates[stack.stack_name]["Resources"]
            found.setdefault(_name(construct), set()).add(construct.node.path)
    return found


def _documented() -> dict[str, str]:
    """Alarm name -> its row of the table under "Alarms (ALARM and OK actions"."""
    page = OPERATIONS.read_text(encoding="utf-8")
    table = page.split("Alarms (ALARM and OK actions", 1)[1].split("\n\n", 2)[1]
    rows: dict[str, str] = {}
    for row in table.splitlines()[2:]:
        first = re.sub(r"\([^)]*\)", "", row.split("|")[1])  # names, not what makes them
        for name in re.findall(r"`([A-Za-z]+)`", first):
            rows[name] = row
    return rows


def test_every_synthesized_alarm_is_in_the_operations_table(
    synthesized: dict[str, set[str]],
) -> None:
    missing = {
        name: sorted(paths) for name, paths in synthesized.items() if name not in _documented()
    }
    assert missing == {}, "add these alarms to docs/operations.md's table"


def test_the_table_lists_no_alarm_the_stacks_do_not_make_but_an_sqs_destinations(
    synthesized: dict[str, set[str]],
) -> None:
    documented = _documented()
    assert set(documented) - set(synthesized) == SQS_ONLY
    for name in SQS_ONLY:
        assert "SQS destinations only" in documented[name]


def test_every_place_a_failure_waits_has_an_age_alarm_in_the_reference_stacks(
    synthesized: dict[str, set[str]],
) -> None:
    """The failed-batch bucket, the quarantine queue, the pipe's and each rule's dead-letter
    queue (issue 41)."""
    assert {"FailedBatchAge", "QuarantineAge", "DeadLetterQueueAge"} <= set(synthesized)
    assert any("InvoicingRule" in path for path in synthesized["DeadLetterQueueAge"])
    assert any("InvoicingRule" in path for path in synthesized["InvocationsFailedToBeSentToDlq"])
