"""What a run of ``make deploy-local`` found, as a table for people and one JSON line."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field


@dataclass
class Summary:
    """The run's findings; :attr:`ok` when the stack deployed and the pipeline worked."""

    stack: str
    endpoint: str = ""
    emulator_pid: int | None = None
    resources_created: int = 0
    consumers_loaded: int = 0
    """Stream consumers that loaded their handler and the runtime layer (empty-batch invoke)."""
    environment_resources: int = 0
    """Tables, queues and buckets named by the consumers' environments, all found."""
    orders_written: int = 0
    view_reconciled: bool = False
    view_seconds: float = 0.0
    """How long the deployed consumer took to bring the view level with the orders."""
    stream_records: int = 0
    orders_counted: int = 0
    markers: int = 0
    """The order-stats consumer's contribution records (one per order it applied)."""
    markers_missing: int = 0
    """Orders the view counts without a contribution record."""
    poison_quarantined: bool = False
    log_group: str = ""
    log_json_lines: int = 0
    log_emf_lines: int = 0
    backfill_refused: bool = False
    """An execution with no segments failed with the start step's refusal."""
    backfill_refusal_error: str = ""
    """Its error: BackfillRefusedError on AWS; MiniStack's Runtime.HandlerError here."""
    backfill_table_items: int = 0
    """Items in the orders table when the backfill started."""
    backfill_status: str = ""
    backfill_seconds: float = 0.0
    backfill_segments: int = 0
    backfill_segments_succeeded: int = 0
    """The Distributed Map's Map Run: its items (segments) and those that succeeded."""
    backfilled_items: int = 0
    """Items the segment function handed to the consumer (its BackfillItems metric)."""
    view_reconciled_after_backfill: bool = False
    diff_changes: list[str] = field(default_factory=list)
    """The ``cdk diff`` lines of the changed app against the deployed stack ([+], [-], [~])."""
    step_seconds: dict[str, float] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return (
            self.resources_created > 0
            and self.consumers_loaded > 0
            and self.view_reconciled
            and self.markers_missing == 0
            and self.poison_quarantined
            and bool(self.diff_changes)
            and self.backfill_ok
        )

    @property
    def backfill_ok(self) -> bool:
        """The refusal, and a backfill whose every segment succeeded, that handed over at least
        the table's items and left the view exact while the stream kept flowing."""
        return (
            self.backfill_refused
            and self.backfill_status == "SUCCEEDED"
            and self.backfill_segments > 0
            and self.backfill_segments_succeeded == self.backfill_segments
            and self.backfilled_items >= self.backfill_table_items
            and self.view_reconciled_after_backfill
        )

    def table(self) -> str:
        rows = [
            ("stack", f"{self.stack} on {self.endpoint}"),
            ("resources created", str(self.resources_created)),
            ("consumers loaded (handler + layer)", str(self.consumers_loaded)),
            ("environment resources found", str(self.environment_resources)),
            ("orders written", str(self.orders_written)),
            (
                "view reconciled",
                f"{'yes' if self.view_reconciled else 'no'} ({self.view_seconds:.1f} s)",
            ),
            (
                "contribution records",
                f"{self.markers} for {self.orders_counted} orders counted "
                f"({self.stream_records} stream records), {self.markers_missing} missing",
            ),
            ("poison order quarantined", "yes" if self.poison_quarantined else "no"),
            (
                "consumer's CloudWatch Logs",
                f"{self.log_json_lines} JSON lines, {self.log_emf_lines} EMF lines in "
                f"{self.log_group}",
            ),
            (
                "backfill refused (0 segments)",
                f"{'yes' if self.backfill_refused else 'no'} ({self.backfill_refusal_error})",
            ),
            (
                "backfill while writing",
                f"{self.backfill_status or 'not run'} in {self.backfill_seconds:.1f} s, "
                f"{self.backfill_segments_succeeded}/{self.backfill_segments} segments, "
                f"{self.backfilled_items} items handed over "
                f"({self.backfill_table_items} in the table at the start)",
            ),
            (
                "view reconciled after the backfill",
                "yes" if self.view_reconciled_after_backfill else "no",
            ),
            ("cdk diff after the change", f"{len(self.diff_changes)} resource change(s)"),
            ("seconds", f"{self.seconds:.1f}"),
        ]
        width = max(len(name) for name, _ in rows)
        lines = [f"  {name.ljust(width)}  {value}" for name, value in rows]
        steps = ", ".join(f"{step} {seconds:.1f}" for step, seconds in self.step_seconds.items())
        verdict = "OK" if self.ok else "FAILED"
        return "\n".join(
            [f"deploy-local summary: {verdict}", *lines, f"  seconds per step: {steps}"]
        )

    def json_line(self) -> str:
        data = asdict(self)
        data["ok"] = self.ok
        return json.dumps(data, sort_keys=True)
