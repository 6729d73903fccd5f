"""The demo's backfill end to end (docs/backfill.md): orders written before the consumer
existed (their changes trimmed from the stream) reach the order-stats view through the stack's
ViewBackfill, run by the local pipeline's segment threads while writes, deletes and TTL expiries
go on, with crashes after commit, transient errors, lost responses and a segment that fails and
resumes; nothing is lost and the view equals its recomputation from the orders table."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console

from reference_app.demo import run_demo
from reference_app.workload import OrderWorkload

pytestmark = pytest.mark.xdist_group("cdc_local")


@pytest.mark.slow
def test_the_demo_backfills_what_was_written_before_the_consumer(
    reference_assembly: Path,
) -> None:
    summary = run_demo(
        reference_assembly,
        "CdcReferenceStack",
        workload=OrderWorkload(changes=500, orders=50, poison=2, seed=3),
        console=Console(quiet=True),
    )

    assert summary.written_before_the_consumer > 0
    assert summary.backfilled_items > 0
    assert summary.backfill_segment_retries >= 1  # the failing segment failed, then resumed
    assert summary.lost == 0
    assert summary.view_reconciled
    assert summary.ok
