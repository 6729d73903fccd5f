from cdc_local.endpoint import LocalEndpoint
from tests.cdc_consumer.fixtures import create_table


def test_endpoint_serves_dynamodb_over_http_on_loopback(aws: LocalEndpoint) -> None:
    assert aws.url.startswith("http://127.0.0.1:")
    ddb = aws.client("dynamodb")
    create_table(ddb, "t")
    assert ddb.list_tables()["TableNames"] == ["t"]


def test_reset_forgets_resources(aws: LocalEndpoint) -> None:
    assert aws.client("dynamodb").list_tables()["TableNames"] == []
