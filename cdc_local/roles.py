"""The stack's IAM roles on the local endpoint, and a session of each function's role.

:func:`create_roles` creates every ``AWS::IAM::Role`` of the template in moto's IAM, with its
trust policy, its inline ``Policies``, its ``ManagedPolicyArns`` (an AWS managed policy is given
its document from moto's copy of them), and the ``AWS::IAM::Policy`` / ``AWS::IAM::ManagedPolicy``
resources attached to it, every document resolved to the local resources' ARNs. References to a
role then resolve to it (``Ref``: its name, ``Fn::GetAtt ... Arn``: its ARN).

:func:`assume_function_role` is what Lambda does before it runs a function: STS ``AssumeRole``
on the function's role, which must trust ``lambda.amazonaws.com``. The session's credentials are
what the function's code, its event source mapping's reads and its on-failure destination use,
so moto checks each of their calls against the statements the template gives that role.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cdc_local.assembly import FunctionSpec, Resource
from cdc_local.authorization import DENIALS, iter_denials, service_principals
from cdc_local.endpoint import LocalEndpoint
from cdc_local.exceptions import AccessDeniedError, LocalPipelineError
from cdc_local.resources import LOCAL_ACCOUNT_ID, LocalResources, physical_name

ROLE_TYPE = "AWS::IAM::Role"
POLICY_TYPE = "AWS::IAM::Policy"
MANAGED_POLICY_TYPE = "AWS::IAM::ManagedPolicy"
#: The service that assumes a function's role.
LAMBDA_PRINCIPAL = "lambda.amazonaws.com"
AWS_MANAGED_POLICY_PREFIX = "arn:aws:iam::aws:policy/"


@dataclass(frozen=True)
class RoleSession:
    """Credentials of one role's session (STS ``AssumeRole``)."""

    role_name: str
    role_arn: str
    access_key_id: str
    secret_access_key: str
    session_token: str

    def environment(self) -> dict[str, str]:
        """The variables Lambda sets for the function's code."""
        return {
            "AWS_ACCESS_KEY_ID": self.access_key_id,
            "AWS_SECRET_ACCESS_KEY": self.secret_access_key,
            "AWS_SESSION_TOKEN": self.session_token,
        }

    def client_credentials(self) -> dict[str, str]:
        """The keyword arguments of ``boto3.client`` for these credentials."""
        return {
            "aws_access_key_id": self.access_key_id,
            "aws_secret_access_key": self.secret_access_key,
            "aws_session_token": self.session_token,
        }


def create_roles(resources: LocalResources, endpoint: LocalEndpoint) -> None:
    """Create the roles of the stack's functions and their policies on ``endpoint`` (see the
    module docstring). Other roles (a state machine's, a pipe's) are not created: nothing runs
    under them locally, and their documents may name resources the pipeline does not create."""
    stack = resources.stack
    iam = endpoint.client("iam")
    used = {
        function_role(resources, spec, stack.resources[spec.logical_id]["Properties"].get("Role"))
        for spec in stack.functions().values()
    }
    for role in stack.of_type(ROLE_TYPE):  # every name: any document may refer to a role
        name = resources.resolve(role.properties.get("RoleName")) or physical_name(
            stack.stack_name, role.logical_id, 64
        )
        resources.refs[role.logical_id] = name
        path = str(role.properties.get("Path", "/"))
        resources.attributes[(role.logical_id, "Arn")] = (
            f"arn:aws:iam::{LOCAL_ACCOUNT_ID}:role{path}{name}"
        )
    for role in stack.of_type(ROLE_TYPE):
        if role.logical_id in used:
            _create_role(resources, iam, role)
    for policy in stack.of_type(POLICY_TYPE, MANAGED_POLICY_TYPE):
        roles = [r.get("Ref") for r in policy.properties.get("Roles", ()) if isinstance(r, Mapping)]
        if any(role in used for role in roles):
            _attach_policy(resources, iam, policy, [resources.refs[r] for r in roles if r in used])


def _create_role(resources: LocalResources, iam: Any, role: Resource) -> None:
    props = resources.resolve(dict(role.properties))
    name = resources.refs[role.logical_id]
    iam.create_role(
        RoleName=name,
        Path=props.get("Path", "/"),
        AssumeRolePolicyDocument=json.dumps(props["AssumeRolePolicyDocument"]),
    )
    for policy in props.get("Policies", ()):
        iam.put_role_policy(
            RoleName=name,
            PolicyName=policy["PolicyName"],
            PolicyDocument=json.dumps(policy["PolicyDocument"]),
        )
    for arn in props.get("ManagedPolicyArns", ()):
        _attach_managed(iam, name, str(arn))


def _attach_managed(iam: Any, role_name: str, arn: str) -> None:
    if not arn.startswith(AWS_MANAGED_POLICY_PREFIX):
        iam.attach_role_policy(RoleName=role_name, PolicyArn=arn)
        return
    from moto.iam.aws_managed_policies import aws_managed_policies_data

    policy_name = arn.rsplit("/", 1)[1]
    document = json.loads(aws_managed_policies_data).get(policy_name, {}).get("Document")
    if document is None:
        raise LocalPipelineError(
            f"role {role_name}: AWS managed policy {arn} is not in moto's copy of the AWS "
            "managed policies; the local pipeline cannot evaluate it (give the role an inline "
            "policy, or run without IAM enforcement)"
        )
    # An inline copy evaluates as the attached policy would.
    iam.put_role_policy(
        RoleName=role_name,
        PolicyName=f"aws-managed-{policy_name}",
        PolicyDocument=json.dumps(document),
    )


def _attach_policy(
    resources: LocalResources, iam: Any, policy: Resource, role_names: list[str]
) -> None:
    props = resources.resolve({k: v for k, v in policy.properties.items() if k != "Roles"})
    document = json.dumps(props["PolicyDocument"])
    if policy.type == POLICY_TYPE:
        for role_name in role_names:
            iam.put_role_policy(
                RoleName=role_name, PolicyName=props["PolicyName"], PolicyDocument=document
            )
        return
    name = props.get("ManagedPolicyName") or physical_name(
        resources.stack.stack_name, policy.logical_id, 128
    )
    arn = iam.create_policy(PolicyName=name, PolicyDocument=document)["Policy"]["Arn"]
    resources.refs[policy.logical_id] = arn
    for role_name in role_names:
        iam.attach_role_policy(RoleName=role_name, PolicyArn=arn)


def function_role(resources: LocalResources, spec: FunctionSpec, role: Any) -> str:
    """The logical id of the stack's role that ``spec``'s ``Role`` property names."""
    reference = role.get("Fn::GetAtt") if isinstance(role, Mapping) else None
    target = reference[0] if isinstance(reference, list) else str(reference or "").split(".")[0]
    if resources.stack.resources.get(target, {}).get("Type") != ROLE_TYPE:
        raise LocalPipelineError(
            f"function {spec.logical_id}: its Role {json.dumps(role)} is not a role of stack "
            f"{resources.stack.stack_name}, so the local pipeline cannot run it under its own "
            "role; give it a role of the stack, or run without IAM enforcement "
            "(LocalPipeline(enforce_iam=False), python -m cdc_local --no-iam)"
        )
    return target


def assume_function_role(
    resources: LocalResources, endpoint: LocalEndpoint, spec: FunctionSpec, role: Any
) -> RoleSession:
    """STS ``AssumeRole`` on the function's role, as Lambda does (the role must trust it)."""
    logical_id = function_role(resources, spec, role)
    name = resources.refs[logical_id]
    arn = resources.attributes[(logical_id, "Arn")]
    iam = endpoint.client("iam")
    trusted = service_principals(_TrustPolicy(iam.get_role(RoleName=name)["Role"]))
    if LAMBDA_PRINCIPAL not in trusted:
        raise LocalPipelineError(
            f"function {spec.logical_id}: its role {name} trusts {sorted(trusted) or 'no service'}"
            f", not {LAMBDA_PRINCIPAL}, so Lambda cannot assume it; add {LAMBDA_PRINCIPAL} to "
            "its AssumeRolePolicyDocument"
        )
    session_name = physical_name(resources.stack.stack_name, spec.logical_id, 64)
    credentials = endpoint.client("sts").assume_role(RoleArn=arn, RoleSessionName=session_name)[
        "Credentials"
    ]
    return RoleSession(
        role_name=name,
        role_arn=arn,
        access_key_id=credentials["AccessKeyId"],
        secret_access_key=credentials["SecretAccessKey"],
        session_token=credentials["SessionToken"],
    )


@dataclass(frozen=True)
class _TrustPolicy:
    """A role as ``GetRole`` returns it, read as :func:`service_principals` reads moto's."""

    role: Mapping[str, Any]

    @property
    def assume_role_policy_document(self) -> str:
        document = self.role.get("AssumeRolePolicyDocument", {})
        return document if isinstance(document, str) else json.dumps(document)


class RoleSessions:
    """Each function's role session (assumed once), and the check that fails the run on a call
    one of them was denied: whoever made it (the function's code, its mapping's reads, its
    on-failure destination) and however that caller handled the error."""

    def __init__(self, resources: LocalResources, endpoint: LocalEndpoint) -> None:
        self.resources = resources
        self.endpoint = endpoint
        self.sessions: dict[str, RoleSession] = {}
        self._owners: dict[str, tuple[str, str]] = {}  # access key -> (function, role)
        self._mark = DENIALS.mark()

    def of(self, spec: FunctionSpec, function_name: str) -> RoleSession:
        """The session of ``spec``'s role (assumed on first use)."""
        if spec.logical_id not in self.sessions:
            role = self.resources.stack.resources[spec.logical_id]["Properties"].get("Role")
            session = assume_function_role(self.resources, self.endpoint, spec, role)
            self.sessions[spec.logical_id] = session
            self._owners[session.access_key_id] = (function_name, session.role_name)
        return self.sessions[spec.logical_id]

    def check(self, function_name: str | None = None) -> None:
        """Raise :class:`AccessDeniedError` for the first function (``function_name``'s only,
        when given) with a denied call since the last check."""
        keys = {key for key, (name, _) in self._owners.items() if function_name in (None, name)}
        denials = list(iter_denials(self._mark, keys))
        if not denials:
            return
        self._mark = DENIALS.mark()
        function, role = self._owners[denials[0].access_key_id]
        mine = [d for d in denials if self._owners[d.access_key_id][0] == function]
        raise AccessDeniedError(function, role, _unique([(d.action, d.resource) for d in mine]))


def _unique(pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    return list(dict.fromkeys(pairs))
