"""The consumer runtime (``cdc_consumer``) as a Lambda layer, built without Docker.

The layer's asset directory is ``python/cdc_consumer/`` (Lambda puts ``/opt/python`` on the
import path). It is built by local bundling: a plain file copy in this process, so neither
Docker nor a build image is needed. The asset hash is the hash of the copied output, so it
changes exactly when the runtime's files change.
"""

from __future__ import annotations

import fnmatch
import shutil
from pathlib import Path

import jsii
from aws_cdk import AssetHashType, BundlingOptions, DockerImage, ILocalBundling, Stack
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from cdc_constructs import defaults
from cdc_constructs.assets import ASSET_EXCLUDES, RUNTIME_PACKAGE, runtime_source_dir

_LAYER_ID = "CdcConsumerRuntimeLayer"


@jsii.implements(ILocalBundling)
class _CopyRuntimePackage:
    """Local bundling: copy ``cdc_consumer`` into ``<output>/python/cdc_consumer``."""

    def __init__(self, source: Path) -> None:
        self._source = source

    def try_bundle(self, output_dir: str, _options: BundlingOptions) -> bool:
        target = Path(output_dir) / "python" / RUNTIME_PACKAGE
        shutil.copytree(
            self._source,
            target,
            ignore=lambda _dir, names: [
                n for n in names if any(fnmatch.fnmatch(n, p) for p in ASSET_EXCLUDES)
            ],
            dirs_exist_ok=True,
        )
        return True


class ConsumerRuntimeLayer(lambda_.LayerVersion):
    """A layer holding ``python/cdc_consumer``; one per stack (use :meth:`of`).

    Compatible runtimes: every Python runtime the consumer runtime supports
    (defaults.LAYER_RUNTIMES); it is pure Python, so the layer works on both architectures.
    """

    def __init__(self, scope: Construct, construct_id: str) -> None:
        source = runtime_source_dir()
        super().__init__(
            scope,
            construct_id,
            description="cdc_consumer: the cdc-constructs stream consumer runtime",
            compatible_runtimes=list(defaults.LAYER_RUNTIMES),
            compatible_architectures=[lambda_.Architecture.ARM_64, lambda_.Architecture.X86_64],
            code=lambda_.Code.from_asset(
                str(source),
                asset_hash_type=AssetHashType.OUTPUT,
                bundling=BundlingOptions(
                    # Never pulled: local bundling always succeeds. CDK requires an image.
                    image=DockerImage.from_registry("public.ecr.aws/sam/build-python3.14"),
                    # jsii calls try_bundle(output_dir, options) with the options as one
                    # positional struct, unlike the keyword-only signature of the stubs.
                    local=_CopyRuntimePackage(source),  # type: ignore[arg-type]
                ),
            ),
        )

    @classmethod
    def of(cls, scope: Construct) -> ConsumerRuntimeLayer:
        """The stack's runtime layer, created on first use, so consumers share one."""
        stack = Stack.of(scope)
        existing = stack.node.try_find_child(_LAYER_ID)
        if isinstance(existing, ConsumerRuntimeLayer):
            return existing
        return cls(stack, _LAYER_ID)
