"""CdcChecks needs cdk-nag 3, which the constructs themselves do not: it is the ``nag`` extra.

cdk-nag 3 runs rule packs as CDK policy-validation plugins (``Validations.of(app).add_plugins``)
and reads acknowledgements made with ``Validations.of(x).acknowledge``; cdk-nag 2 has neither.
The constructs acknowledge their by-design findings through aws-cdk-lib's Validations API,
which needs no cdk-nag at all, so an app on cdk-nag 2 (or none) can still use them.
"""

from __future__ import annotations

from importlib import metadata

INSTALL_HINT = "pip install 'cdc-constructs[nag]'"


def require_cdk_nag_3() -> None:
    """Raise ImportError naming the fix unless cdk-nag 3 is installed."""
    try:
        version: str | None = metadata.version("cdk-nag")
    except metadata.PackageNotFoundError:
        version = None
    major = version.split(".", 1)[0] if version else ""
    if not major.isdigit() or int(major) < 3:
        found = f"cdk-nag {version} is installed" if version else "cdk-nag is not installed"
        raise ImportError(
            f"cdc_constructs.nag (CdcChecks) needs cdk-nag 3 and {found}: {INSTALL_HINT}. "
            "The constructs themselves work without it."
        )
