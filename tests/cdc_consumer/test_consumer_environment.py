"""cdc_consumer.testing.consumer_environment: what a StreamConsumer gives its function, for a
test of a handler module as deployed, and nothing left behind afterwards."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from cdc_consumer import environment_variables
from cdc_consumer.testing import (
    DEFAULT_SHARD_ID,
    FakeContext,
    consumer_environment,
    stream_event,
    stream_record,
)

HANDLER = """
import os
from cdc_consumer import Change, PermanentError, StreamProcessor

processor = StreamProcessor()


@processor.projection
def count(change: Change) -> list[dict]:
    if "n" not in change.new_image:
        raise PermanentError("no n")
    item = {"pk": {"S": change.keys["pk"]}, "n": {"N": str(change.new_image["n"])}}
    return [{"Put": {"TableName": os.environ["VIEW_TABLE_NAME"], "Item": item}}]


def handler(event, context):
    return processor.handle(event, context)
"""


def test_the_handler_runs_as_deployed_and_everything_is_restored(tmp_path: Path) -> None:
    (tmp_path / "view_handler.py").write_text(HANDLER)
    before_environ, before_path = dict(os.environ), list(sys.path)
    with consumer_environment(
        tmp_path, consumer_name="views", tables={"VIEW_TABLE_NAME": "pk"}
    ) as env:
        assert os.environ[environment_variables.CONSUMER_NAME_ENV] == "views"
        assert os.environ[environment_variables.IDEMPOTENCY_TABLE_ENV] == env.idempotency_table_name
        assert os.environ[environment_variables.QUARANTINE_QUEUE_ENV] == env.quarantine_queue_url
        assert os.environ["AWS_ENDPOINT_URL"].startswith("http://127.0.0.1:")
        assert os.environ["AWS_REGION"] == env.region and os.environ["AWS_ACCESS_KEY_ID"]
        assert sys.path[0] == str(tmp_path.resolve())
        module = env.import_handler("view_handler")
        records = [
            stream_record("INSERT", {"pk": "a"}, new_image={"pk": "a", "n": 1}, sequence_number=1),
            stream_record("INSERT", {"pk": "b"}, new_image={"pk": "b"}, sequence_number=2),
        ]
        assert module.handler(stream_event(records), FakeContext()) == {"batchItemFailures": []}
        view = env.table_names["VIEW_TABLE_NAME"]
        item = env.client("dynamodb").get_item(TableName=view, Key={"pk": {"S": "a"}})["Item"]
        assert item["n"] == {"N": "1"}
        (quarantined,) = env.quarantined()
        assert quarantined["consumer"] == "views"
        assert quarantined["error"]["type"] == "PermanentError"
        url = env.endpoint_url
    assert dict(os.environ) == before_environ and sys.path == before_path
    sys.modules.pop("view_handler", None)
    # The server is stopped.
    import urllib.error
    import urllib.request

    try:
        urllib.request.urlopen(url, timeout=5)
    except (urllib.error.URLError, ConnectionError):
        pass
    else:
        raise AssertionError(f"{url} still answers")


def test_the_ledger_is_on_as_the_construct_sets_it(tmp_path: Path) -> None:
    """StreamConsumer gives its function a ledger table (CDC_LEDGER_TABLE_NAME): so does the
    environment, or the runtime's first transaction fails on a table that does not exist."""
    (tmp_path / "ledger_handler.py").write_text(HANDLER)
    with consumer_environment(tmp_path, tables={"VIEW_TABLE_NAME": "pk"}) as env:
        assert os.environ[environment_variables.LEDGER_TABLE_ENV] == env.ledger_table_name
        module = env.import_handler("ledger_handler")
        records = [
            stream_record("INSERT", {"pk": k}, new_image={"pk": k, "n": 1}, sequence_number=n)
            for n, k in enumerate("abc", start=1)
        ]
        event = stream_event(records, shard_id=DEFAULT_SHARD_ID)  # a windowed mapping's
        for _ in range(2):  # a redelivery finds the records listed
            answer = module.handler(event, FakeContext())
            assert answer == {"batchItemFailures": [], "state": {}}
        dynamodb = env.client("dynamodb")
        ledger = dynamodb.scan(TableName=env.ledger_table_name)["Items"]
        (entry,) = [item for item in ledger if item["seq"]["S"][:1].isdigit()]
        assert entry["count"] == {"N": "3"}
        assert dynamodb.scan(TableName=env.idempotency_table_name)["Items"] == []  # no marker
    sys.modules.pop("ledger_handler", None)


def test_without_the_ledger_the_runtime_writes_markers(tmp_path: Path) -> None:
    """``ledger=False``: an idempotency table given as a plain ITable (no ledger beside it)."""
    (tmp_path / "marker_handler.py").write_text(HANDLER)
    with consumer_environment(tmp_path, tables={"VIEW_TABLE_NAME": "pk"}, ledger=False) as env:
        assert env.ledger_table_name is None
        assert environment_variables.LEDGER_TABLE_ENV not in os.environ
        module = env.import_handler("marker_handler")
        record = stream_record(
            "INSERT", {"pk": "a"}, new_image={"pk": "a", "n": 1}, sequence_number=1
        )
        module.handler(stream_event([record]), FakeContext())
        markers = env.client("dynamodb").scan(TableName=env.idempotency_table_name)["Items"]
        assert [m["id"]["S"].split("#")[0] for m in markers] == ["test-consumer"]
    sys.modules.pop("marker_handler", None)
