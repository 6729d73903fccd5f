"""Where the repository's own files are, found from this file, never from the working directory."""

from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
"""The checkout: app.py, cdk.json, node_modules/ (the pinned CDK CLI)."""

CDK_CLI = REPO_ROOT / "node_modules" / ".bin" / "cdk"
"""The CDK CLI pinned by package.json (installed by ``npm ci``)."""

DEFAULT_WORKDIR = REPO_ROOT / ".deploy-local"
"""Where a run keeps its logs and cloud assemblies unless told otherwise (git-ignored)."""
