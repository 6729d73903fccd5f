from tests.cdc_consumer.fixtures import count_requests, faults, ledger, resources
from tests.cdc_consumer.redrive_world import queue_url, sqs, stream

__all__ = ["count_requests", "faults", "ledger", "queue_url", "resources", "sqs", "stream"]
