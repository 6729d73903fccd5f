"""The constructs set the variables under the names the runtime reads (docs/interfaces.md §2)."""

from cdc_consumer import defaults

from cdc_constructs import environment


def test_the_constructs_and_the_runtime_agree_on_the_variable_names() -> None:
    assert environment.CONSUMER_NAME == defaults.CONSUMER_NAME_ENV
    assert environment.IDEMPOTENCY_TABLE == defaults.IDEMPOTENCY_TABLE_ENV
    assert environment.QUARANTINE_QUEUE_URL == defaults.QUARANTINE_QUEUE_ENV
    assert environment.METRICS_NAMESPACE == defaults.METRICS_NAMESPACE_ENV
    assert environment.MARKER_TTL_SECONDS == defaults.MARKER_TTL_ENV
