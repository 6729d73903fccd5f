from cdc_local.endpoint import LocalEndpoint


def test_endpoint_serves_dynamodb_over_http_on_loopback(aws: LocalEndpoint) -> None:
    assert aws.url.startswith("http://127.0.0.1:")
    ddb = aws.client("dynamodb")
    ddb.create_table(
        TableName="t",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    assert ddb.list_tables()["TableNames"] == ["t"]


def test_reset_forgets_resources(aws: LocalEndpoint) -> None:
    assert aws.client("dynamodb").list_tables()["TableNames"] == []
