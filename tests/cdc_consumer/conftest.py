from tests.cdc_consumer.fixtures import count_requests, faults, resources
from tests.cdc_consumer.redrive_world import queue_url, sqs, stream

__all__ = ["count_requests", "faults", "queue_url", "resources", "sqs", "stream"]
