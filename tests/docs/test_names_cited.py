"""What the docs name exists: the logical ids they look up are in the synthesized templates
(tests/snapshots), the options they pass to the console scripts are the scripts' own, the
`make` targets are the Makefile's and the `python -m` modules import. A rename in the code
fails here until the docs follow (issue 26 §5: `OrderStatsRedriveFunction` outlived its
resource)."""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
from pathlib import Path

import pytest

from tests.docs.blocks import REPO_ROOT, pages

SNAPSHOTS = REPO_ROOT / "tests" / "snapshots"
# Not modules of this repository: the tools they name are installed with it.
OTHER_MODULES = {"build", "pytest", "ministack"}


def _page_id(page: Path) -> str:
    return page.relative_to(REPO_ROOT).as_posix()


def _logical_ids() -> set[str]:
    return {
        logical_id
        for snapshot in SNAPSHOTS.glob("*.json")
        for logical_id in json.loads(snapshot.read_text())["Resources"]
    }


def _code_names() -> set[str]:
    names: set[str] = set()
    for root in ("cdc_constructs", "lambda_src", "cdc_local", "reference_app"):
        for path in (REPO_ROOT / root).rglob("*.py"):
            names |= set(re.findall(r"\b[A-Z]\w+\b", path.read_text()))
    return names


def _parsers() -> dict[str, argparse.ArgumentParser]:
    from cdc_consumer.redrive.cli import build_parser as redrive_parser

    from cdc_local.__main__ import build_parser as local_parser

    return {"cdc-redrive": redrive_parser(), "cdc-local": local_parser()}


def _options(parser: argparse.ArgumentParser) -> set[str]:
    return {option for action in parser._actions for option in action.option_strings}


# A logical id as the docs cite it: looked up by prefix, or shortened with "...".
_CITED_ID = re.compile(
    r"starts_with\(LogicalResourceId, '(\w+)'\)|(?<![\w/.-])([A-Z][a-z]+(?:[A-Z][a-z0-9]+)+)\.\.\."
)


@pytest.mark.parametrize("page", pages(), ids=_page_id)
def test_cited_logical_ids_are_in_the_synthesized_templates(page: Path) -> None:
    ids, code = _logical_ids(), _code_names()
    missing = [
        name
        for match in _CITED_ID.finditer(page.read_text())
        for name in [match[1] or match[2]]
        if not any(logical_id.startswith(name) for logical_id in ids)
        and not (match[2] and name in code)  # `StreamFilters...`: a class, not an id
    ]
    assert not missing, f"{_page_id(page)} cites logical ids no template has: {missing}"


@pytest.mark.parametrize("page", pages(), ids=_page_id)
def test_console_script_options_are_the_scripts_own(page: Path) -> None:
    parsers = _parsers()
    text = page.read_text().replace("\\\n", " ")
    unknown = []
    for script, parser in parsers.items():
        known = _options(parser)
        for line in re.findall(rf"(?<![\w-]){script}((?: [^`\n|]*)?)", text):
            unknown += [
                f"{script} {option}"
                for option in re.findall(r"(?<![\w-])(--[a-z][a-z-]*)", line)
                if option not in known
            ]
    assert not unknown, f"{_page_id(page)} passes options the scripts do not have: {unknown}"


@pytest.mark.parametrize("page", pages(), ids=_page_id)
def test_make_targets_and_python_modules_exist(page: Path) -> None:
    text = page.read_text()
    targets = set(re.findall(r"^([a-z][\w-]*):", (REPO_ROOT / "Makefile").read_text(), re.M))
    code_spans = "\n".join(
        [*re.findall(r"`([^`\n]+)`", text), *re.findall(r"```(?:bash|sh)\n(.*?)```", text, re.S)]
    )
    problems = [
        f"make {target}"
        for target in re.findall(r"(?<![\w-])make ([a-z][\w-]*)", code_spans)
        if target not in targets
    ]
    problems += [
        f"python -m {module}"
        for module in re.findall(r"python -m ([a-z_][\w.]*)", code_spans)
        if module.split(".")[0] not in OTHER_MODULES and importlib.util.find_spec(module) is None
    ]
    assert not problems, f"{_page_id(page)} names what does not exist: {problems}"


def test_the_checks_catch_a_stale_name(tmp_path: Path) -> None:
    """The redrive function's id in CdcReferenceStack before the consumers became one group.
    (CdcKinesisReferenceStack's order-stats consumer has a redrive function of that name since
    the Kinesis route got one: issue 30.)"""
    reference = json.loads((SNAPSHOTS / "CdcReferenceStack.json").read_text())["Resources"]
    assert not any(i.startswith("OrderStatsRedriveFunction") for i in reference)
    assert any(i.startswith("OrdersConsumersRedriveFunction") for i in reference)
    assert "--demo" not in _options(_parsers()["cdc-local"])
