"""lambda_src is found from the package, in a checkout and in an installed wheel."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from cdc_constructs import assets
from tests.cdc_constructs.support import REPO_ROOT


def test_checkout_layout_is_found():
    assert assets.lambda_src_dir() == REPO_ROOT / "lambda_src"
    assert assets.runtime_source_dir() == REPO_ROOT / "lambda_src" / "cdc_consumer"


def test_missing_code_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setattr(assets, "_CANDIDATES", (tmp_path / "nowhere",))
    try:
        assets.lambda_src_dir()
    except assets.CdcAssetError as error:
        assert "cannot find its Lambda code" in str(error) and str(tmp_path) in str(error)
    else:
        raise AssertionError("expected CdcAssetError")


def test_built_package_ships_lambda_src_as_package_data(tmp_path):
    """setuptools' build_py with pyproject.toml: the files a wheel would contain."""
    project = tmp_path / "project"
    project.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(REPO_ROOT / name, project / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(REPO_ROOT / "cdc_constructs", project / "cdc_constructs", ignore=ignore)
    shutil.copytree(REPO_ROOT / "lambda_src", project / "lambda_src", ignore=ignore)
    shutil.copytree(REPO_ROOT / "cdc_local", project / "cdc_local", ignore=ignore)
    # Stand-ins so the check does not depend on what the runtime currently contains.
    (project / "lambda_src" / "cdc_consumer" / "probe_module.py").write_text("X = 1\n")
    build = tmp_path / "build"
    subprocess.run(
        [
            sys.executable,
            "-c",
            "from setuptools import setup; setup()",
            "-q",
            "build_py",
            "-d",
            str(build),
        ],
        cwd=project,
        check=True,
        capture_output=True,
    )
    assert (build / "cdc_consumer" / "probe_module.py").is_file()
    assert (build / "cdc_constructs" / "_lambda_src" / "cdc_consumer" / "probe_module.py").is_file()
    # The orders example (reference_app/, its handlers included) is not the library.
    assert not (build / "cdc_constructs" / "_lambda_src" / "handlers").exists()
    assert not list(build.rglob("order_stats.py"))
    assert (build / "cdc_constructs" / "py.typed").is_file()
    # Every subpackage is listed in pyproject's `packages` (they are listed by hand there).
    subpackages = sorted(
        path.parent.relative_to(REPO_ROOT)
        for path in (REPO_ROOT / "cdc_constructs").rglob("__init__.py")
        if "__pycache__" not in path.parts
    )
    assert Path("cdc_constructs/nag") in subpackages
    for subpackage in subpackages:
        for module in (REPO_ROOT / subpackage).glob("*.py"):
            assert (build / subpackage / module.name).is_file(), f"{subpackage} not packaged"
    # Installed (not a checkout): assets.py finds the package data next to itself.
    env = {**os.environ, "PYTHONPATH": str(build)}
    located = subprocess.run(
        [
            sys.executable,
            "-c",
            "from cdc_constructs.assets import lambda_src_dir; print(lambda_src_dir())",
        ],
        cwd=tmp_path,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    assert Path(located.stdout.strip()) == build / "cdc_constructs" / "_lambda_src"
