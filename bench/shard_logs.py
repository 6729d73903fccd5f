"""What the consumers of several shards log and emit (stdout, as in Lambda), told apart by shard.

The runtime prints one JSON object per line: log lines (``level``, ``message``) and one CloudWatch
embedded-metric-format document per batch (``_aws``). :class:`ShardLogs` stands in for stdout
while the shards run: each thread's text is cut into lines on its own (threads' writes
interleave), and each line is read into the counts of the shard that thread runs.
"""

from __future__ import annotations

import io
import json
import threading
from collections import Counter
from dataclasses import dataclass, field

#: Examples of failure messages kept per shard.
EXAMPLES = 3
#: Metrics that are not counts (a sum over batches means nothing).
NOT_COUNTS = frozenset({"IteratorLagMs"})


@dataclass
class LoggedCounts:
    """One shard's metrics (summed over its EMF documents) and failure log lines."""

    metrics: Counter[str] = field(default_factory=Counter)
    failures: int = 0
    failure_examples: list[str] = field(default_factory=list)

    def read(self, line: str) -> None:
        try:
            document = json.loads(line)
        except ValueError:
            return
        if not isinstance(document, dict):
            return
        if "_aws" in document:
            for definition in document["_aws"]["CloudWatchMetrics"][0]["Metrics"]:
                name = definition["Name"]
                if name not in NOT_COUNTS:
                    self.metrics[name] += document.get(name, 0)
        elif document.get("message") == "record failed":
            self.failures += 1
            message = str((document.get("error") or {}).get("message", ""))[:300]
            if len(self.failure_examples) < EXAMPLES and message not in self.failure_examples:
                self.failure_examples.append(message)


class ShardLogs(io.TextIOBase):
    """A stdout that reads each registered thread's lines into its :class:`LoggedCounts`;
    other threads' text is dropped."""

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()
        self._counts: dict[int, LoggedCounts] = {}
        self._pending: dict[int, str] = {}

    def register(self, counts: LoggedCounts) -> None:
        """From now on, the calling thread's lines are read into ``counts``."""
        with self._lock:
            self._counts[threading.get_ident()] = counts

    def write(self, text: str) -> int:  # type: ignore[override]
        thread = threading.get_ident()
        with self._lock:
            counts = self._counts.get(thread)
            if counts is None:
                return len(text)
            *lines, rest = (self._pending.get(thread, "") + text).split("\n")
            self._pending[thread] = rest
        for line in lines:
            counts.read(line)
        return len(text)
