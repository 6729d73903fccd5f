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


class AccessDeniedError(LocalPipelineError):
    """A function (its code, its event source mapping's reads or its on-failure destination)
    made a call its own role does not allow, with IAM enforced: the template's statements are
    not enough. Never retried: a role does not heal. ``function``, ``role``, ``action`` and
    ``resource`` say which (the first denial; the message lists every one)."""

    def __init__(self, function: str, role: str, denials: list[tuple[str, str]]) -> None:
        action, resource = denials[0]
        listed = "; ".join(f"{a} on {r}" for a, r in denials)
        super().__init__(
            f"function {function} (role {role}) was denied {listed}: the statements the "
            f"template gives role {role} do not allow it. Grant {action} on {resource} to the "
            "role (the construct that made the function should), or run without IAM "
            "enforcement to see what else happens"
        )
        self.function = function
        self.role = role
        self.action = action
        self.resource = resource


class ServiceRoleDeniedError(LocalPipelineError):
    """A pipe's or a state machine's role (services the local pipeline does not run) does not
    allow a call the service makes with it (:mod:`cdc_local.service_roles`). ``resource_type``,
    ``logical_id``, ``role``, ``action`` and ``resource`` say which (the first; the message
    lists every one)."""

    def __init__(
        self, resource_type: str, logical_id: str, role: str, denials: list[tuple[str, str]]
    ) -> None:
        action, resource = denials[0]
        listed = "; ".join(f"{a} on {r}" for a, r in denials)
        super().__init__(
            f"{resource_type} {logical_id} (role {role}) would be denied {listed}: the "
            f"statements the template gives role {role} do not allow it. Grant {action} on "
            f"{resource} to the role (the construct that made the {resource_type} should), or "
            "run without IAM enforcement to see what else happens"
        )
        self.resource_type = resource_type
        self.logical_id = logical_id
        self.role = role
        self.action = action
        self.resource = resource
