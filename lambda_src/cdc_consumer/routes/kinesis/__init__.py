"""The Kinesis route: a table's changes in a Kinesis data stream (its Kinesis destination)."""
