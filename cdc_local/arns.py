"""What the local pipeline reads out of an ARN."""

from __future__ import annotations

__all__ = ["stream_table_name"]


def stream_table_name(stream_arn: str) -> str:
    """The table of a DynamoDB stream ARN,
    ``arn:<partition>:dynamodb:<region>:<account>:table/<name>/stream/<label>``."""
    return stream_arn.split(":", 5)[5].split("/")[1]
