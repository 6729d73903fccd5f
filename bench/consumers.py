"""The two consumers under test, loaded the way Lambda loads them.

* ``cdc-constructs``: the reference handler ``reference_app/handlers/order_stats.py`` with the
  consumer runtime on the path (the layer), handler string ``order_stats.handler``.
* ``powertools``: bench/baseline/powertools_order_stats.py.
* ``seed``: bench/baseline/seed_order_stats.py, the seed design (one TransactWriteItems per
  record: marker + effect) computing the reference handler's own actions.

Both modules create their boto3 clients at import time from the environment, so they are imported
after the environment points at the local endpoint and the instrumentation is installed.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
LAMBDA_SRC = REPO / "lambda_src"
HANDLERS = REPO / "reference_app" / "handlers"
BASELINE_DIR = Path(__file__).resolve().parent / "baseline"

#: The reference handler's consumer name: its markers are "{CONSUMER_NAME}#{eventID}".
CONSUMER_NAME = "order-stats"
#: Module names as Lambda imports them (handler directory and layer on sys.path).
REFERENCE_MODULE = "order_stats"
BASELINE_MODULE = "powertools_order_stats"
SEED_MODULE = "seed_order_stats"


@dataclass
class Consumer:
    """A loaded consumer: its Lambda handler, and its module (to see what it applied)."""

    name: str
    handler: Callable[[dict[str, Any], Any], Any]
    module: Any
    #: Whether its mapping has a tumbling window (a StreamConsumer's), so its events name their
    #: shard (bench/esm.py); the baselines' mappings have none.
    windowed: bool = False


def _import(module: str, *paths: Path) -> Any:
    for path in reversed(paths):
        if str(path) not in sys.path:
            sys.path.insert(0, str(path))
    return importlib.import_module(module)


def load_reference() -> Consumer:
    """The cdc-constructs reference handler (needs the runtime branch's code)."""
    module = _import(REFERENCE_MODULE, HANDLERS, LAMBDA_SRC)
    return Consumer("cdc-constructs", module.handler, module, windowed=True)


def load_baseline() -> Consumer:
    """The Powertools baseline."""
    module = _import(BASELINE_MODULE, BASELINE_DIR)
    return Consumer("powertools", module.handler, module)


def load_seed() -> Consumer:
    """The seed design: one transaction per record, with the reference handler's actions."""
    module = _import(SEED_MODULE, BASELINE_DIR, HANDLERS, LAMBDA_SRC)
    return Consumer("seed", module.handler, module)


#: The latest-image consumer's name (its view is a replica of the orders table).
LATEST_IMAGE = "latest-image"


def load_latest_image(replica_table: str) -> Consumer:
    """The runtime with ``LatestImage`` (a version-guarded put of each change's NEW image, a
    tombstone for a REMOVE) as its projection: writes that need no processed-marker."""
    _import("cdc_consumer", LAMBDA_SRC)
    from cdc_consumer import LatestImage, StreamProcessor

    processor = StreamProcessor()
    processor.projection(LatestImage(table_name=replica_table))
    return Consumer(LATEST_IMAGE, processor.handle, processor, windowed=True)
