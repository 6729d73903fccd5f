"""What a newcomer reads first says what there is and how to install it: the README and the
home page name every construct and every command; Getting started and the README show the
wheel with the extras pyproject.toml declares; the backfill guide's Contributions example gives
its three names three different values and explains ``reads=``."""

from __future__ import annotations

import ast
import inspect
import re
import tomllib

import pytest
from constructs import Construct

import cdc_constructs
from tests.docs.blocks import DOCS, REPO_ROOT, blocks

PROJECT = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
CONSTRUCTS = sorted(
    name
    for name in cdc_constructs.__all__
    if name not in ("CdcChecks", "CdcChecksError")
    and inspect.isclass(getattr(cdc_constructs, name))
    and issubclass(getattr(cdc_constructs, name), Construct)
)
COMMANDS = sorted(PROJECT["scripts"])
EXTRAS = sorted(PROJECT["optional-dependencies"])
PAGES = {"README.md": REPO_ROOT / "README.md", "docs/index.md": DOCS / "index.md"}


def test_the_lists_are_not_empty() -> None:
    assert {"ViewBackfill", "KinesisConsumer", "OutboxPublisher"} <= set(CONSTRUCTS)
    assert {"cdc-local", "cdc-redrive", "cdc-backfill"} <= set(COMMANDS)


@pytest.mark.parametrize("page", sorted(PAGES))
def test_every_construct_and_command_is_named(page: str) -> None:
    text = PAGES[page].read_text()
    missing = [name for name in (*CONSTRUCTS, *COMMANDS) if f"`{name}`" not in text]
    assert not missing, f"{page} does not name {missing}"


@pytest.mark.parametrize("page", ["README.md", "docs/getting-started.md"])
def test_the_install_shows_the_wheel_with_every_extra(page: str) -> None:
    text = (REPO_ROOT / page).read_text()
    wheels = re.findall(
        rf"cdc_constructs-{re.escape(PROJECT['version'])}-py3-none-any\.whl\[([\w,]+)\]", text
    )
    assert wheels, f"{page}: no `pip install ...cdc_constructs-{PROJECT['version']}-...whl[...]`"
    assert all(sorted(found.split(",")) == EXTRAS for found in wheels), wheels
    by_name = re.findall(r'"cdc-constructs\[([\w,]+)\]"', text)
    assert by_name and sorted(by_name[0].split(",")) == EXTRAS, f"{page}: {by_name}"
    for extra in EXTRAS:
        assert f"`{extra}`" in text, f"{page} does not say what the {extra} extra is for"


def test_the_contributions_example_gives_each_name_its_own_value() -> None:
    page = DOCS / "backfill.md"
    (code,) = [b.code for b in blocks(page) if "Contributions(" in b.code and b.kind == "python"]
    tree = ast.parse(code)
    calls = {
        ast.unparse(node.func): node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and ast.unparse(node.func) in ("StreamProcessor", "Contributions")
    }
    consumer = ast.literal_eval(calls["StreamProcessor"].args[0])
    namespace = ast.literal_eval(calls["Contributions"].args[0])
    namespace_env: dict = {}
    exec(compile(code, str(page), "exec"), namespace_env)
    (share,) = namespace_env["order_shares"]({"customerId": "c1", "status": "open"})
    view_table = share[0]
    assert len({consumer, namespace, view_table}) == 3, (consumer, namespace, view_table)
    text = page.read_text()
    assert re.search(r"\*\*`reads=\[\"NewImage\"\]`\*\* declares the images", text)
