"""Where the Lambda code shipped with the library lives, found from this file, never the cwd.

In a repository checkout it is ``<repo>/lambda_src``; in an installed wheel it is package
data under ``cdc_constructs/_lambda_src`` (pyproject.toml maps it there).
"""

from __future__ import annotations

from pathlib import Path

from cdc_constructs.exceptions import CdcAssetError

_PACKAGE_DIR = Path(__file__).resolve().parent
_CANDIDATES = (_PACKAGE_DIR / "_lambda_src", _PACKAGE_DIR.parent / "lambda_src")

RUNTIME_PACKAGE = "cdc_consumer"
"""The consumer runtime's package name (what handlers import)."""

ASSET_EXCLUDES = ("__pycache__", "*.pyc", ".keep", ".DS_Store")
"""Files never deployed: bytecode caches depend on the local interpreter and would change
the asset hash on every test run."""


def lambda_src_dir() -> Path:
    """The directory holding ``cdc_consumer/``."""
    for candidate in _CANDIDATES:
        if (candidate / RUNTIME_PACKAGE).is_dir():
            return candidate
    raise CdcAssetError(
        "cdc_constructs cannot find its Lambda code: looked for cdc_consumer/ in "
        + " and ".join(str(c) for c in _CANDIDATES)
        + "; reinstall the cdc-constructs package or restore lambda_src/ in the checkout"
    )


def runtime_source_dir() -> Path:
    """``lambda_src/cdc_consumer``: the consumer runtime deployed as a layer."""
    return lambda_src_dir() / RUNTIME_PACKAGE
