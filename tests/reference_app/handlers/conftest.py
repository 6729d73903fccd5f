from tests.cdc_consumer.fixtures import count_requests, faults, resources

__all__ = ["count_requests", "faults", "resources"]
