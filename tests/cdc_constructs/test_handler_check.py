"""A handler that names no module or function of its code asset is refused at synthesis, with
the asset's path, what exists there and the close match; the module is read, not imported."""

from __future__ import annotations

import zipfile
from pathlib import Path

import aws_cdk as cdk
import pytest
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_kinesis as kinesis
from aws_cdk import aws_lambda as lambda_

from cdc_constructs import (
    CdcConfigurationError,
    ChangeCaptureTable,
    KinesisConsumer,
    StreamConsumer,
)
from cdc_constructs.handler_check import check_handler_on_disk

PK = dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING)
USERS = (
    "from cdc_consumer import StreamProcessor\n\n"
    "processor = StreamProcessor()\n\n\n"
    "def handler(event, context):\n"
    "    return processor.handle(event, context)\n"
)


@pytest.fixture
def asset(tmp_path: Path) -> Path:
    (tmp_path / "users.py").write_text(USERS)
    (tmp_path / "requirements.txt").write_text("")
    return tmp_path


def _refusal(asset: Path, handler: str, stack: cdk.Stack) -> str:
    table = ChangeCaptureTable(stack, "Users", partition_key=PK)
    with pytest.raises(CdcConfigurationError) as raised:
        StreamConsumer(
            stack, "Counts", table=table, code=lambda_.Code.from_asset(str(asset)), handler=handler
        )
    return str(raised.value)


def test_a_wrong_module_is_refused_naming_the_asset_and_the_close_match(
    stack: cdk.Stack, asset: Path
) -> None:
    message = _refusal(asset, "user.handler", stack)
    assert "handler='user.handler'" in message
    assert str(asset) in message and "there is no user.py (there is: users.py)" in message
    assert "did you mean 'users.handler'?" in message


def test_a_wrong_function_is_refused_naming_what_the_module_defines(
    stack: cdk.Stack, asset: Path
) -> None:
    message = _refusal(asset, "users.handle", stack)
    assert "users.py in the code asset" in message and str(asset) in message
    assert "has no 'handle' (it defines: StreamProcessor, handler, processor)" in message
    assert "did you mean 'users.handler'?" in message


def test_no_close_match_gives_no_suggestion(stack: cdk.Stack, asset: Path) -> None:
    message = _refusal(asset, "billing.main", stack)
    assert "there is no billing.py (there is: users.py)" in message
    assert "did you mean" not in message


def test_a_module_that_does_not_parse_is_refused_with_the_line(
    stack: cdk.Stack, asset: Path
) -> None:
    (asset / "users.py").write_text("def handler(event, context)\n    return {}\n")
    message = _refusal(asset, "users.handler", stack)
    assert "syntax error at line 1" in message


def test_the_module_is_read_not_imported(tmp_path: Path) -> None:
    """Importing it would raise; reading it finds the handler."""
    (tmp_path / "app.py").write_text("raise SystemExit('imported')\nhandler = object()\n")
    code = lambda_.Code.from_asset(str(tmp_path))
    assert check_handler_on_disk(code, "app.handler") == []


@pytest.mark.parametrize(
    "source",
    [
        "from shared import handler\n",
        "import json\nhandler = make()\n",
        "try:\n    from fast import handler\nexcept ImportError:\n    def handler(e, c): pass\n",
        "async def handler(event, context):\n    pass\n",
        "from shared import *\n",  # names unknowable without running it: not refused
    ],
)
def test_names_bound_at_module_level_are_found(tmp_path: Path, source: str) -> None:
    (tmp_path / "app.py").write_text(source)
    assert check_handler_on_disk(lambda_.Code.from_asset(str(tmp_path)), "app.handler") == []


def test_a_package_module_and_a_zip_asset(tmp_path: Path) -> None:
    package = tmp_path / "src" / "consumers"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "users.py").write_text(USERS)
    code = lambda_.Code.from_asset(str(tmp_path / "src"))
    assert check_handler_on_disk(code, "consumers.users.handler") == []
    (problem,) = check_handler_on_disk(code, "consumers.user.handler")
    assert "did you mean 'consumers.users.handler'?" in problem.allowed
    archive = tmp_path / "code.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("users.py", USERS)
    zipped_code = lambda_.Code.from_asset(str(archive))
    assert check_handler_on_disk(zipped_code, "users.handler") == []
    (problem,) = check_handler_on_disk(zipped_code, "users.handle")
    assert "did you mean 'users.handler'?" in problem.allowed


def test_code_that_is_not_a_local_asset_is_not_checked() -> None:
    inline = lambda_.Code.from_inline("def handler(event, context): pass\n")
    assert check_handler_on_disk(inline, "index.anything") == []


def test_kinesis_consumer_checks_its_handler_too(stack: cdk.Stack, asset: Path) -> None:
    with pytest.raises(CdcConfigurationError, match=r"did you mean 'users\.handler'"):
        KinesisConsumer(
            stack,
            "Counts",
            stream=kinesis.Stream(stack, "Changes"),
            stream_retention=cdk.Duration.hours(24),
            code=lambda_.Code.from_asset(str(asset)),
            handler="user.handler",
        )
