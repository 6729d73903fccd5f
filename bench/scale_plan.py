"""What the scale section (bench/scale.py) runs: its workloads, shard counts and batches.

Its own module, so the section and its report (bench/scale_report.py) share the names.
"""

from __future__ import annotations

SHARD_COUNTS = (1, 2, 4, 8, 16, 32, 64)
QUICK_SHARD_COUNTS = (1, 2)
BATCH_SIZE = 100
DISTINCT = "distinct keys"
HOT = "hot aggregate"
REFERENCE = "reference workload"
SHARED_HOT = "hot aggregate, one item for every shard"
#: The workloads with targets; the shared-item variant (no target) runs at fewer shard counts.
WORKLOADS = (DISTINCT, HOT, REFERENCE)
SHARED_HOT_SHARD_COUNTS = (2, 8, 32)
#: Batches per shard of distinct keys and the hot aggregate (every batch alike): fewer at many
#: shards, so the section takes minutes on 2 cores.
BATCHES_PER_SHARD = {1: 8, 2: 8, 4: 6, 8: 4, 16: 3, 32: 2, 64: 2}
#: Batches per shard of the reference workload at every shard count: the first 600 changes of
#: each shard's own reference workload, so every row has the same mix of changes (its first
#: batches are mostly INSERTs, which write more per record than its average).
REFERENCE_BATCHES_PER_SHARD = 6
QUICK_BATCHES_PER_SHARD = 2


def batches_per_shard(workload: str, shards: int, quick: bool) -> int:
    """How many batches each shard delivers in the row of ``workload`` at ``shards``."""
    if quick:
        return QUICK_BATCHES_PER_SHARD
    return REFERENCE_BATCHES_PER_SHARD if workload == REFERENCE else BATCHES_PER_SHARD[shards]


#: Failures in a row of one batch before its shard stops (Lambda's retries are finite too).
MAX_ATTEMPTS = 10
