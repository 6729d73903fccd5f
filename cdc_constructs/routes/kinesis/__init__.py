"""The Kinesis route (docs/design.md §9): a table streams its changes into a Kinesis data stream
(:mod:`~cdc_constructs.routes.kinesis.destination`), a :class:`KinesisConsumer` reads them
(:mod:`~cdc_constructs.routes.kinesis.consumer`) over the route
(:mod:`~cdc_constructs.routes.kinesis.route`: its mapping's source and grants, its redrive, its
lag alarm), the table's replication to the stream is alarmed
(:mod:`~cdc_constructs.routes.kinesis.replication_alarms`), and its filters match the Kinesis
record (:mod:`~cdc_constructs.routes.kinesis.record_shape`).
"""

from cdc_constructs.routes.kinesis.consumer import (
    KinesisConsumer,
    KinesisFilters,
    KinesisMappingOptions,
    kinesis_record_age,
)
from cdc_constructs.routes.kinesis.destination import KinesisDestination
from cdc_constructs.routes.kinesis.replication_alarms import KinesisReplicationAlarms
from cdc_constructs.routes.kinesis.route import (
    KINESIS_REDRIVE_ACTIONS,
    KinesisRoute,
    KinesisStreamRedrive,
    KinesisStreamRoute,
)

__all__ = [
    "KINESIS_REDRIVE_ACTIONS",
    "KinesisConsumer",
    "KinesisDestination",
    "KinesisFilters",
    "KinesisMappingOptions",
    "KinesisReplicationAlarms",
    "KinesisRoute",
    "KinesisStreamRedrive",
    "KinesisStreamRoute",
    "kinesis_record_age",
]
