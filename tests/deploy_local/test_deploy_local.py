"""``make deploy-local`` end to end: the reference stack synthesized, bootstrapped and deployed
by the pinned CDK CLI to MiniStack, then driven through boto3, the backfill state machine
included (about 2-4 minutes on 2 cores).

The flow runs once for the module; it raises (failing every test here with the step and its
log) when the stack does not deploy, a consumer cannot import its layer or its environment
names something that is not there; the tests below check what it found.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from deploy_local import EmulatorVenv, Options, Summary, run
from deploy_local.checks import NOT_DEPLOYED_TYPES, template_resources
from tests.deploy_local.conftest import processes_mentioning

# One worker runs them all (make test: pytest -n 2 --dist loadgroup), so the flow runs once.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("deploy_local")]


@pytest.fixture(scope="module")
def deployed(
    tmp_path_factory: pytest.TempPathFactory, ministack_venv: EmulatorVenv
) -> Iterator[tuple[Summary, Path]]:
    workdir = tmp_path_factory.mktemp("deploy-local")
    lines: list[str] = []
    summary = run(Options(workdir=workdir, venv=ministack_venv), progress=lines.append)
    print("\n".join(lines), summary.table(), sep="\n")
    yield summary, workdir


def test_every_resource_of_the_synthesized_template_is_created(
    deployed: tuple[Summary, Path],
) -> None:
    summary, workdir = deployed
    expected = template_resources(workdir / "cdk.out", summary.stack)
    deployable = [kind for kind in expected.values() if kind not in NOT_DEPLOYED_TYPES]
    assert summary.resources_created == len(deployable)


def test_each_stream_consumer_loads_its_handler_and_the_runtime_layer(
    deployed: tuple[Summary, Path],
) -> None:
    summary, _ = deployed
    assert summary.consumers_loaded >= 1
    # Each consumer names at least its idempotency table and quarantine queue, all found.
    assert summary.environment_resources >= 2 * summary.consumers_loaded


def test_the_deployed_consumer_reconciles_the_view_and_keeps_each_orders_contribution(
    deployed: tuple[Summary, Path],
) -> None:
    summary, _ = deployed
    assert 0 < summary.orders_written <= Options().changes + Options().changes // 3
    assert summary.view_reconciled
    assert summary.markers >= summary.orders_counted > 0
    assert summary.markers_missing == 0


def test_the_deployed_backfill_refuses_bad_input_then_backfills_while_orders_are_written(
    deployed: tuple[Summary, Path],
) -> None:
    summary, _ = deployed
    assert summary.backfill_refused, summary.backfill_refusal_error
    assert summary.backfill_status == "SUCCEEDED"
    assert summary.backfill_segments == summary.backfill_segments_succeeded == 4
    assert summary.backfilled_items >= summary.backfill_table_items > 0
    assert summary.view_reconciled_after_backfill


def test_a_poison_order_lands_in_the_quarantine_queue(deployed: tuple[Summary, Path]) -> None:
    summary, _ = deployed
    assert summary.poison_quarantined


def test_the_consumer_logs_json_and_metrics_to_its_log_group(
    deployed: tuple[Summary, Path],
) -> None:
    summary, _ = deployed
    assert summary.log_json_lines > 0
    assert summary.log_emf_lines > 0


def test_cdk_diff_shows_the_change_to_the_app_against_the_deployed_stack(
    deployed: tuple[Summary, Path],
) -> None:
    summary, _ = deployed
    assert any("AWS::SNS::Subscription" in line for line in summary.diff_changes), (
        summary.diff_changes
    )
    assert summary.ok


def test_the_emulator_and_its_lambda_workers_are_stopped(deployed: tuple[Summary, Path]) -> None:
    summary, workdir = deployed
    assert summary.emulator_pid is not None
    with pytest.raises(ProcessLookupError):
        os.kill(summary.emulator_pid, 0)
    assert processes_mentioning(str(workdir)) == []
