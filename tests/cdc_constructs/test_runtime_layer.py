"""The runtime layer: python/cdc_consumer built without Docker; its hash follows content only."""

from __future__ import annotations

import json
from pathlib import Path

import aws_cdk as cdk
import pytest

from cdc_constructs import ConsumerRuntimeLayer, runtime_layer


def _synth_layer(outdir: Path, context: dict) -> tuple[str, Path]:
    app = cdk.App(outdir=str(outdir), context=context)
    stack = cdk.Stack(app, "Layer")
    ConsumerRuntimeLayer.of(stack)
    assert ConsumerRuntimeLayer.of(stack) is ConsumerRuntimeLayer.of(stack)
    assembly = app.synth()
    (layer,) = [
        r
        for r in assembly.get_stack_by_name("Layer").template["Resources"].values()
        if r["Type"] == "AWS::Lambda::LayerVersion"
    ]
    key = layer["Properties"]["Content"]["S3Key"]
    return key, Path(assembly.directory) / f"asset.{key.removesuffix('.zip')}"


@pytest.fixture
def runtime_source(tmp_path, monkeypatch) -> Path:
    source = tmp_path / "src" / "cdc_consumer"
    source.mkdir(parents=True)
    (source / "__init__.py").write_text("VERSION = 1\n")
    (source / "processor.py").write_text("def handle():\n    return 1\n")
    monkeypatch.setattr(runtime_layer, "runtime_source_dir", lambda: source)
    return source


def test_layer_holds_python_cdc_consumer(runtime_source, tmp_path, cdk_context):
    _, asset = _synth_layer(tmp_path / "a", cdk_context)
    files = sorted(str(p.relative_to(asset)) for p in asset.rglob("*") if p.is_file())
    assert files == ["python/cdc_consumer/__init__.py", "python/cdc_consumer/processor.py"]


def test_hash_depends_only_on_content(runtime_source, tmp_path, cdk_context):
    first, _ = _synth_layer(tmp_path / "a", cdk_context)
    # Bytecode caches and timestamps do not count...
    cache = runtime_source / "__pycache__"
    cache.mkdir()
    (cache / "processor.cpython-311.pyc").write_bytes(b"\x00bytecode")
    (runtime_source / "processor.py").touch()
    again, _ = _synth_layer(tmp_path / "b", cdk_context)
    assert again == first
    # ...a change to the code does.
    (runtime_source / "processor.py").write_text("def handle():\n    return 2\n")
    changed, _ = _synth_layer(tmp_path / "c", cdk_context)
    assert changed != first


def test_real_runtime_layer_synthesizes(tmp_path, cdk_context):
    key, asset = _synth_layer(tmp_path / "real", cdk_context)
    assert (asset / "python" / "cdc_consumer").is_dir()
    # The names the constructs set the environment by ship with the runtime that reads them.
    assert (asset / "python" / "cdc_consumer" / "environment_variables.py").is_file()
    assert json.dumps(key).endswith('.zip"')
