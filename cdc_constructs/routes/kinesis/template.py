"""The Kinesis route as the checks find it in any app's template: a Kinesis stream (or an
enhanced fan-out consumer naming its stream) or a literal Kinesis ARN; its retention is the
stream's ``RetentionPeriodHours`` (Kinesis' default 24 when the template does not say); its
records carry a table's changes under ``data`` when a table of the template streams into it
(``KinesisStreamSpecification``), anything otherwise.
"""

from __future__ import annotations

from typing import Final

from cdc_constructs.routes.kinesis.record_shape import KINESIS_CHANGE_RECORD, KINESIS_RECORD
from cdc_constructs.routes.route import TemplateRoute

__all__ = ["KINESIS_TEMPLATE"]

KINESIS_TEMPLATE: Final = TemplateRoute(
    name="kinesis",
    resource_types=frozenset({"AWS::Kinesis::Stream", "AWS::Kinesis::StreamConsumer"}),
    arn_parts=(":kinesis:",),
    pipe_parameters="KinesisStreamParameters",
    reads_table_stream=False,
    record_shape=KINESIS_CHANGE_RECORD,
    foreign_record_shape=KINESIS_RECORD,
    stream_properties={"AWS::Kinesis::StreamConsumer": "StreamARN"},
    retention_hours_property="RetentionPeriodHours",
    table_destination_property="KinesisStreamSpecification",
)
"""A Kinesis data stream in any template."""
