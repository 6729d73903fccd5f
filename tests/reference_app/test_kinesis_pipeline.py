"""End to end through CdcKinesisReferenceStack on the local pipeline: the table's changes reach
the Kinesis stream late, repeated and mixed with poison records; both consumers (latest-image
replica, order-stats view) crash, meet transient errors and duplicate deliveries. Nothing is
lost, the replica equals the table and the view its recomputation."""

from __future__ import annotations

from pathlib import Path

import pytest

from cdc_local.endpoint import LocalEndpoint
from reference_app.kinesis_demo import KINESIS_FAULTS, run_kinesis_demo
from reference_app.workload import OrderWorkload

pytestmark = [pytest.mark.xdist_group("cdc_local"), pytest.mark.slow]


@pytest.fixture(scope="module")
def kinesis_assembly(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import aws_cdk as cdk

    from reference_app.kinesis_stack import CdcKinesisReferenceStack

    outdir = tmp_path_factory.mktemp("kinesis-reference.out")
    app = cdk.App(outdir=str(outdir))
    CdcKinesisReferenceStack(app, "CdcKinesisReferenceStack")
    app.synth()
    return outdir


def test_5000_changes_reordered_repeated_crashing_and_poisoned_lose_nothing(
    aws: LocalEndpoint, kinesis_assembly: Path
) -> None:
    summary = run_kinesis_demo(
        kinesis_assembly,
        "CdcKinesisReferenceStack",
        # 200 customers: few transactions split on a customer's view item, so the run stays
        # within minutes on a loaded machine; reordering still crosses each order's changes.
        workload=OrderWorkload(changes=5000, orders=400, customers=200, poison=3, seed=5),
        faults=KINESIS_FAULTS,
        endpoint=aws,
    )
    # The faults happened...
    assert summary.out_of_order_per_item > 0 and summary.duplicated > 0
    assert summary.poison_records > 0 and summary.crashes > 0
    # Every change (the workload's and the TTL sweeper's deletions) went to Kinesis, some twice.
    assert summary.changes_streamed > 5000
    assert summary.kinesis_records == (
        summary.changes_streamed + summary.duplicated + summary.poison_records
    )
    # ... every poison record and poison write was quarantined by both consumers' runtime ...
    assert summary.quarantined >= summary.poison_records * 2 + 3
    # ... and nothing was lost: the replica is the table, the aggregate its recomputation.
    assert summary.on_failure_messages == 0
    assert summary.lost == 0
    assert summary.replica_equals_table
    assert summary.view_reconciled
