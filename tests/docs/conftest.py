"""The built site, once per session: `mkdocs build --strict` as `make docs` runs it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.docs.blocks import REPO_ROOT

VENV_BIN = Path(sys.executable).parent


@pytest.fixture(scope="session")
def built_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site directory of a strict build (a broken link, anchor or docstring reference
    fails the build, and so this fixture)."""
    site = tmp_path_factory.mktemp("site") / "site"
    done = subprocess.run(
        [str(VENV_BIN / "mkdocs"), "build", "--strict", "--site-dir", str(site)],
        cwd=REPO_ROOT,
        env={
            "PATH": f"{VENV_BIN}:/usr/bin:/bin",
            "HOME": str(tmp_path_factory.getbasetemp()),
            "NO_MKDOCS_2_WARNING": "1",
        },
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return site
