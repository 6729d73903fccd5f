"""CdcChecks prints one summary line at every synthesis of any app, clean or not, so a user can
tell the rule pack ran; ``-c cdcNagVerbose=true`` lists each acknowledgement with its reason."""

from __future__ import annotations

from pathlib import Path

import pytest
from aws_cdk import Acknowledgment, App, Stack, Validations

from .test_readers import build
from .validation_report import synthesize_with_checks

pytestmark = pytest.mark.xdist_group("nag-rules")


def _summary(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("CdcChecks: ")]


def test_a_clean_app_prints_one_line(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert synthesize_with_checks(build(tmp_path, ["m", "p"])) == []
    (line,) = _summary(capsys.readouterr().err)
    assert line.startswith(
        "CdcChecks: 2 stream readers and 0 backfill state machines checked, "
        "0 unacknowledged findings; the app acknowledges "
    ), line
    assert line.endswith("(each with its reason: -c cdcNagVerbose=true)"), line


def test_an_app_with_findings_prints_the_line_with_their_count(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    findings = synthesize_with_checks(build(tmp_path, ["m", "m", "m"]))
    assert findings
    (line,) = _summary(capsys.readouterr().err)
    assert f"checked, {len(findings)} unacknowledged findings;" in line, line


def test_an_app_with_no_stream_reader_still_says_it_ran(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    app = App(outdir=str(tmp_path))
    Stack(app, "NoStreams")
    assert synthesize_with_checks(app) == []
    assert _summary(capsys.readouterr().err) == [
        "CdcChecks: 0 stream readers and 0 backfill state machines checked, "
        "0 unacknowledged findings; the app acknowledges 0 cdk-nag findings "
        "(each with its reason: -c cdcNagVerbose=true)"
    ]


def test_verbose_context_lists_each_acknowledgement_with_its_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    app = App(outdir=str(tmp_path), context={"cdcNagVerbose": "true"})
    Validations.of(Stack(app, "Consumers")).acknowledge(
        Acknowledgment(id="CDC-ESM6", reason="only changes made after go-live matter")
    )
    synthesize_with_checks(app)
    lines = capsys.readouterr().err.splitlines()
    (head,) = _summary("\n".join(lines))
    assert head.endswith("the app acknowledges 1 cdk-nag finding:"), head
    assert lines[lines.index(head) + 1] == (
        "  - CDC-ESM6 on Consumers: only changes made after go-live matter"
    )
