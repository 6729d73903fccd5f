"""Errors the local pipeline raises. Each message names what was wrong, the value, and what
would be right."""

from __future__ import annotations


class LocalPipelineError(Exception):
    """Base class of every error the local pipeline raises on purpose."""


class AssemblyError(LocalPipelineError):
    """The cloud assembly (``cdk.out``) is missing, malformed, or lacks what the pipeline needs."""


class ResolutionError(LocalPipelineError):
    """A CloudFormation intrinsic function could not be resolved to a local value."""


class FunctionLoadError(LocalPipelineError):
    """A Lambda function's handler could not be imported from its asset directory."""


class PipelineStuck(LocalPipelineError):
    """A mapping keeps failing on the same records and its settings never let them go
    (infinite retries and record age), so draining would never finish."""
