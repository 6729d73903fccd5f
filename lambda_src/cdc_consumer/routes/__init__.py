"""The change sources (routes) the consumer reads, one package each: ``dynamodb_stream`` (a
table's DynamoDB stream) and ``kinesis`` (a table's Kinesis data stream destination). A route
says how its records are identified, ordered, decoded and read back; nothing outside this
package names a route (docs/design.md, "Adding a source")."""
