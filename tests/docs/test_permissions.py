"""docs/permissions.md's IAM tables are the synthesized policies: regenerated here from a
sample app (docs/_ext/iam.py, `make permissions`), they must equal the page; every statement
has its reason, none grants a wildcard action or resource."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest

from tests.docs.blocks import DOCS

pytestmark = pytest.mark.xdist_group("permissions")


def _iam_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("iam_tables", DOCS / "_ext" / "iam.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


iam = _iam_module()


@pytest.fixture(scope="module")
def assembly(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return iam.sample_app(tmp_path_factory.mktemp("permissions.out"))


def test_the_page_shows_the_synthesized_policies(assembly: Path) -> None:
    assert iam.render_page(assembly) == iam.PAGE.read_text(), (
        "docs/permissions.md differs from the synthesized policies: run make permissions "
        "and review the diff"
    )


def test_no_statement_grants_a_wildcard(assembly: Path) -> None:
    for template_file in assembly.glob("*.template.json"):
        resources = json.loads(template_file.read_text())["Resources"]
        for logical_id, policy in resources.items():
            if policy["Type"] != "AWS::IAM::Policy":
                continue
            for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
                actions = iam._listed(statement["Action"])
                assert not [a for a in actions if "*" in a], (logical_id, statement)
                if "*" in iam._listed(statement["Resource"]):  # only where AWS has no other
                    assert set(actions) <= iam.NO_RESOURCE_LEVEL, (logical_id, statement)


def test_a_permission_without_a_reason_is_refused() -> None:
    with pytest.raises(LookupError, match="add one to REASONS"):
        iam._reason("Role", "SomethingNew", "ec2:RunInstances")
