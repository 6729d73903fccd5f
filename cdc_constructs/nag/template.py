"""The synthesized CloudFormation resources a construct belongs to.

CdcChecks judges what will be deployed: the resource as it stands in its stack's synthesized
template, escape-hatch overrides (``add_property_override``) included. cdk-nag's own rules read
the L1 construct's properties instead, which miss those overrides, and aws-cdk-lib offers no
public way to render a single resource with them; the template on disk is the one complete
source. CDK runs validation plugins after it has written every template, so it is always there
when the pack runs as a plugin (``Validations.of(app).add_plugins(CdcChecks())``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from aws_cdk import CfnResource, Stack, Stage

from cdc_constructs.nag.exceptions import CdcChecksError

Resources = Mapping[str, Mapping[str, Any]]


def template_path(stack: Stack) -> Path:
    """Where CDK wrote ``stack``'s template: its stage's assembly directory + its file name."""
    stage = Stage.of(stack)
    if stage is None:
        raise CdcChecksError(
            f"stack {stack.node.path!r} is not inside an App or Stage, so it has no synthesized "
            "template; create it under an App"
        )
    return Path(stage.outdir) / stack.template_file


def logical_id(node: CfnResource) -> str:
    """The resource's logical id in its stack's template."""
    return str(node.stack.resolve(node.logical_id))


class TemplateCache:
    """Parsed ``Resources`` of each synthesized template, read once per validation run."""

    def __init__(self) -> None:
        self._resources: dict[Path, Resources] = {}

    def resources_of(self, node: CfnResource) -> Resources:
        """The ``Resources`` section of the template ``node`` is synthesized into."""
        path = template_path(node.stack)
        if path not in self._resources:
            if not path.is_file():
                raise CdcChecksError(
                    f"CdcChecks reads synthesized templates, but {str(path)!r} (stack "
                    f"{node.stack.node.path!r}) does not exist; register the pack with "
                    "Validations.of(app).add_plugins(CdcChecks()) and run app.synth() (or cdk "
                    "synth) instead of calling validate_scope() before synthesis"
                )
            template = json.loads(path.read_text(encoding="utf-8"))
            self._resources[path] = template.get("Resources", {})
        return self._resources[path]
