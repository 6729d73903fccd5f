"""The docs build strictly, their code blocks run, and the README stays short and true.

The code-block convention is docs/writing-docs.md's (see tests/docs/blocks.py): python and
bash blocks run unless an HTML comment marker on the line before the fence says otherwise.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from cdc_constructs.nag.backfill_rules import BACKFILL_RULES
from cdc_constructs.nag.rules import RULES
from tests.docs.blocks import DOCS, REPO_ROOT, Block, blocks, pages

README = REPO_ROOT / "README.md"
VENV_BIN = Path(sys.executable).parent
DESIGN_SECTIONS = [
    "Premise and guarantees",
    "Layout",
    "Constructs and defaults",
    "Consumer runtime",
    "Redrive",
    "Local pipeline",
    "Tests and checks",
    "Style",
    "The Kinesis route",
    "What a change costs",
    "Backfill and rebuild",
    "The ledger: one entry per transaction",
    "The TTL archive",
]


def _environment() -> dict[str, str]:
    """This test's interpreter and Node first on PATH, the checkout importable: what the quick
    start leaves a shell with after the documented activation line."""
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join(
        [str(VENV_BIN), str(REPO_ROOT / "node_modules" / ".bin"), env.get("PATH", "")]
    )
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT), str(REPO_ROOT / "lambda_src")])
    env["JSII_SILENCE_WARNING_UNTESTED_NODE_VERSION"] = "1"
    env["CDK_DISABLE_VERSION_CHECK"] = "1"
    env.pop("CDK_OUTDIR", None)
    return env


def _page_id(page: Path) -> str:
    return page.relative_to(REPO_ROOT).as_posix()


def _run(block: Block, workdir: Path, index: int) -> subprocess.CompletedProcess[str]:
    if block.kind == "python":
        script = workdir / f"block_{index}.py"
        script.write_text(block.code)
        command = [sys.executable, str(script)]
        cwd = workdir
        env = _environment()
    else:
        command = ["bash", "-euo", "pipefail", "-c", block.code]
        cwd = REPO_ROOT
        # As a reader's shell: what is importable comes from the documented activation (the
        # quick start installs the library into .venv, editable), not from this test.
        env = {k: v for k, v in _environment().items() if k != "PYTHONPATH"}
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


def test_site_builds_strictly(built_site: Path) -> None:
    """`mkdocs build --strict`, as `make docs` runs it (the built_site fixture): a broken link,
    anchor or docstring reference fails."""
    api = (built_site / "api.html").read_text()
    assert "StreamConsumer" in api and "ttl_after" in api  # generated from the docstrings


@pytest.mark.parametrize("page", pages(), ids=_page_id)
def test_code_blocks_run(page: Path, tmp_path: Path) -> None:
    """Every python and shell block of the page runs (in order, sharing one working directory
    for python blocks); a `fails` block exits non-zero; every python block compiles."""
    problems = []
    for index, block in enumerate(blocks(page)):
        if block.kind == "python":
            try:
                compile(block.code, block.where, "exec")
            except SyntaxError as error:
                problems.append(f"{block.where}: does not compile: {error}")
                continue
        if block.action == "file":
            target = tmp_path / block.argument
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(block.code)
            continue
        if block.action not in ("run", "fails") or block.kind is None:
            continue
        done = _run(block, tmp_path, index)
        output = f"--- stdout ---\n{done.stdout[-4000:]}\n--- stderr ---\n{done.stderr[-4000:]}"
        if block.action == "run" and done.returncode != 0:
            problems.append(f"{block.where}: exit {done.returncode}\n{output}")
        if block.action == "fails" and done.returncode == 0:
            problems.append(f"{block.where}: marked 'fails' but succeeded\n{output}")
    assert not problems, "\n\n".join(problems)


@pytest.mark.parametrize("page", pages(), ids=_page_id)
def test_markers_carry_a_reason_and_run_only_runnable_languages(page: Path) -> None:
    for block in blocks(page):
        if block.action in ("skip", "fails"):
            assert re.fullmatch(r"\(.+\)", block.argument), (
                f"{block.where}: give the reason in parentheses: docs-test: {block.action} (...)"
            )
        if block.action in ("run", "fails", "file"):
            assert block.kind is not None, f"{block.where}: {block.language!r} blocks do not run"


def test_readme_is_at_most_250_lines() -> None:
    lines = README.read_text().count("\n")
    assert lines <= 250, f"README.md has {lines} lines; move detail into docs/"


_REPO_PATH = re.compile(
    r"(?<![\w./-])((?:bench|cdc_constructs|cdc_local|docs|lambda_src|reference_app|tests)/"
    r"[\w./-]*[\w/]|[\w-]+\.(?:md|txt|toml|json|yml|cfg|py)|LICENSE|Makefile)(?![\w/-])"
)


@pytest.mark.parametrize("page", pages(), ids=_page_id)
def test_links_and_repository_paths_exist(page: Path) -> None:
    """Relative links resolve, and the tests that docs-test markers name exist; in the README
    also every repository path named in the text (it must not send a reader to a file the
    repository does not contain; the pages also name paths of an installed wheel)."""
    text = page.read_text()
    missing = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        path = (page.parent / target.split("#", 1)[0]).resolve()
        if not path.exists():
            missing.append(f"link {target}")
    prose = re.sub(r"```.*?```", "", text, flags=re.S)  # users' files appear in examples
    for span in re.findall(r"`([^`\n]+)`", prose) if page == README else []:
        for candidate in _REPO_PATH.findall(span):
            named = "/" in candidate or candidate in ("LICENSE", "Makefile")
            if (named or candidate.isupper()) and not (REPO_ROOT / candidate).exists():
                missing.append(f"path {candidate}")
    for comment in re.findall(r"<!--(.*?)-->", text, re.S):
        for candidate in re.findall(r"tests/[\w/]+\.py", comment):
            if not (REPO_ROOT / candidate).exists():
                missing.append(f"path {candidate} (in a docs-test marker)")
    assert not missing, f"{_page_id(page)} names what the repository lacks: {missing}"


def test_no_page_cites_a_design_file_outside_the_repository() -> None:
    pattern = re.compile(r"(?<![\w/])DESIGN\.md")
    offenders = [
        str(path.relative_to(REPO_ROOT))
        for path in [*pages(), *REPO_ROOT.glob("bench/*.md")]
        if pattern.search(path.read_text())
    ]
    for package in ("cdc_constructs", "lambda_src", "cdc_local", "bench", "reference_app"):
        for path in (REPO_ROOT / package).rglob("*.py"):
            if pattern.search(path.read_text()):
                offenders.append(str(path.relative_to(REPO_ROOT)))
    assert not offenders, f"cite docs/design.md §N instead: {offenders}"


def test_design_keeps_its_section_numbers() -> None:
    text = (DOCS / "design.md").read_text()
    headings = re.findall(r"^## §(\d+) ([^{\n]+?)\s*(?:\{[^}]*\})?$", text, re.M)
    assert [(int(number), title) for number, title in headings] == list(
        enumerate(DESIGN_SECTIONS, start=1)
    )


def test_every_cdc_checks_rule_has_its_section() -> None:
    """Rule messages can link to docs/checks.md#<rule id in lower case>."""
    text = (DOCS / "checks.md").read_text()
    for rule in (*RULES, *BACKFILL_RULES):
        anchor = rule.rule_id.lower()
        assert re.search(rf"^### {re.escape(rule.rule_id)} \{{ #{anchor} \}}$", text, re.M), (
            f"docs/checks.md has no section '### {rule.rule_id} {{ #{anchor} }}': add one"
        )
