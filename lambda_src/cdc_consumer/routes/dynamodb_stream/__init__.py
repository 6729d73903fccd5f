"""The DynamoDB stream route: a table's own stream, read by a Lambda event source mapping."""
