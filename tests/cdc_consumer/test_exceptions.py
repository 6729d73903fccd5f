"""Every error the runtime raises is a CdcConsumerError; invalid arguments are ValueErrors too."""

from __future__ import annotations

import cdc_consumer
import cdc_consumer.redrive
import pytest
from cdc_consumer import CdcConsumerError


@pytest.mark.parametrize(
    "name", [n for n in cdc_consumer.__all__ if n.endswith("Error") and n != "CdcConsumerError"]
)
def test_each_exported_error_is_a_cdc_consumer_error(name: str) -> None:
    assert issubclass(getattr(cdc_consumer, name), CdcConsumerError)


@pytest.mark.parametrize("name", ["FilterPatternError", "OutboxInputError", "TtlValueError"])
def test_errors_about_an_invalid_value_are_value_errors(name: str) -> None:
    assert issubclass(getattr(cdc_consumer, name), ValueError)


def test_invalid_values_are_caught_as_value_errors_and_as_the_librarys_errors() -> None:
    for call in (
        lambda: cdc_consumer.validate_ttl(1_700_000_000_000),  # milliseconds
        lambda: cdc_consumer.redrive.check_filter_pattern({"eventName": "INSERT"}),
    ):
        with pytest.raises(ValueError):
            call()
        with pytest.raises(CdcConsumerError):
            call()
