"""IAM enforcement on the local endpoint: moto's own evaluator, given the actions and resources
AWS would check, and every denial written down.

moto's server authenticates and authorizes every request once ``INITIAL_NO_AUTH_ACTION_COUNT``
requests have passed (:data:`ENFORCEMENT` sets it to 0 while a pipeline holds it, as moto's
``/moto-api/reset-auth`` does; the environment variable sets it when moto is imported). It then
evaluates the caller's identity policies (an IAM user's, or an assumed role's inline and
attached policies) for ``<service>:<operation>`` on one resource. moto works out that resource
for SQS (the queue), S3 (bucket or object), IAM and STS; for every other service it checks
``*``, against which a statement scoped to an ARN never matches.
:func:`apply` patches moto so that these requests are checked as AWS checks them:

- DynamoDB: the table (or index) ARN; ``TransactWriteItems`` is each item's ``PutItem`` /
  ``UpdateItem`` / ``DeleteItem`` / ``ConditionCheckItem`` on its table, ``TransactGetItems``
  each ``GetItem`` (there is no ``dynamodb:TransactWriteItems`` action), ``BatchWriteItem`` and
  ``BatchGetItem`` each of their tables;
- DynamoDB Streams: the stream ARN (``GetRecords`` from its shard iterator), ``ListStreams`` on
  ``*`` (the action takes no resource);
- a route's source service: what the route registers (:func:`register_checks`; a Kinesis
  stream: the stream or the enhanced fan-out consumer ARN, ``GetRecords`` from its iterator);
- SNS: the topic ARN;
- SQS: the batch operations are the actions IAM knows (``SendMessageBatch`` is
  ``sqs:SendMessage``, ...).

Two identities are not roles of the stack. The *operator* (the endpoint's fixed credentials,
:data:`cdc_local.endpoint.LOCAL_CREDENTIALS`) plays the account's administrator and the AWS
services the pipeline emulates (DynamoDB's TTL sweeper and Kinesis delivery, test code, an
application pointed at the endpoint): it is allowed everything, and it may assume a role whose
trust policy names a service principal (as Lambda assumes a function's role). Every function runs
with the credentials of its own role's session.

Every denied request is recorded (:data:`DENIALS`) with the caller's access key, its ARN, the
action and the resource, so the pipeline can name them however the caller's code handled the
error. docs/local.md says what this checks and what it does not.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

#: The operator's identity (see the module docstring).
OPERATOR_ARN = "arn:aws:iam::123456789012:user/cdc-local-operator"
#: What the operator may do: everything.
OPERATOR_POLICY = json.dumps(
    {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}
)
_MARKER = "_cdc_local_authorization"


@dataclass(frozen=True)
class Denial:
    """One request moto refused: who (access key id and ARN), the action and the resource."""

    access_key_id: str
    principal_arn: str
    action: str
    resource: str


class DenialLedger:
    """Every denial since the process started, in order (thread-safe: the server's request
    threads record, the pipeline reads)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._denials: list[Denial] = []

    def record(self, denial: Denial) -> None:
        with self._lock:
            self._denials.append(denial)

    def mark(self) -> int:
        """A position: :meth:`since` returns what was recorded after it."""
        with self._lock:
            return len(self._denials)

    def since(self, mark: int) -> list[Denial]:
        with self._lock:
            return self._denials[mark:]


DENIALS = DenialLedger()

# --- the actions and resources a request needs ---------------------------------------------------

Checks = list[tuple[str, str]]
"""(operation as IAM names it, resource ARN) pairs, each checked on its own."""

_TRANSACT_ITEM_ACTIONS = {
    "Put": "PutItem",
    "Update": "UpdateItem",
    "Delete": "DeleteItem",
    "ConditionCheck": "ConditionCheckItem",
    "Get": "GetItem",
}
#: SQS batch operations: IAM checks the single operation's action.
_SQS_ACTIONS = {
    "SendMessageBatch": "SendMessage",
    "DeleteMessageBatch": "DeleteMessage",
    "ChangeMessageVisibilityBatch": "ChangeMessageVisibility",
}


def request_body(response: Any) -> dict[str, Any]:
    """The request's JSON body (moto's DynamoDB handler has parsed it already)."""
    if isinstance(response.body, dict):
        return response.body
    try:
        body = json.loads(response.body or "{}")
    except (TypeError, ValueError):
        return {}
    return body if isinstance(body, dict) else {}


def _dynamodb_checks(response: Any, action: str) -> Checks:
    body = request_body(response)
    table_arn = f"arn:aws:dynamodb:{response.region}:{response.current_account}:table/"
    if action in ("TransactWriteItems", "TransactGetItems"):
        checks = []
        for item in body.get("TransactItems", []):
            for kind, request in item.items():
                table = request.get("TableName", "*")
                checks.append((_TRANSACT_ITEM_ACTIONS.get(kind, kind), table_arn + table))
        return checks
    if action in ("BatchWriteItem", "BatchGetItem"):
        return [(action, table_arn + table) for table in body.get("RequestItems", {})]
    if isinstance(body.get("TableName"), str):
        resource = table_arn + body["TableName"]
        if isinstance(body.get("IndexName"), str):
            resource += f"/index/{body['IndexName']}"
        return [(action, resource)]
    if isinstance(body.get("ResourceArn"), str):
        return [(action, body["ResourceArn"])]
    return [(action, "*")]


def _streams_checks(response: Any, action: str) -> Checks:
    body = request_body(response)
    if isinstance(body.get("StreamArn"), str):
        return [(action, body["StreamArn"])]
    if isinstance(body.get("ShardIterator"), str):  # moto's: "<stream ARN>|1|<id>"
        return [(action, body["ShardIterator"].split("|", 1)[0])]
    return [(action, "*")]


def _sns_checks(response: Any, action: str) -> Checks:
    for key in ("TopicArn", "TargetArn", "ResourceArn"):
        value = response._get_param(key)
        if isinstance(value, str):
            return [(action, value)]
    return [(action, "*")]


def _sqs_checks(response: Any, action: str) -> Checks:
    return [(_SQS_ACTIONS.get(action, action), response._determine_resource())]


#: The checks of the services a route reads beside these (each route registers its own:
#: :func:`register_checks`), by moto's response handler type (a function that imports it).
_REGISTERED: list[tuple[Callable[[], type], Callable[[Any, str], Checks]]] = []


def register_checks(handler_type: Callable[[], type], checks: Callable[[Any, str], Checks]) -> None:
    """Check the requests moto's ``handler_type()`` answers with ``checks(response, action)``
    (a route's source service; registering the same pair again changes nothing)."""
    if (handler_type, checks) not in _REGISTERED:
        _REGISTERED.append((handler_type, checks))


def _checks_of(response: Any) -> Callable[[Any, str], Checks] | None:
    from moto.dynamodb.responses import DynamoHandler
    from moto.dynamodbstreams.responses import DynamoDBStreamsHandler
    from moto.sns.responses import SNSResponse
    from moto.sqs.responses import SQSResponse

    for handler_type, checks in (
        (DynamoDBStreamsHandler, _streams_checks),
        (DynamoHandler, _dynamodb_checks),
        (SNSResponse, _sns_checks),
        (SQSResponse, _sqs_checks),
        *((load(), registered) for load, registered in _REGISTERED),
    ):
        if isinstance(response, handler_type):
            return checks
    return None


# --- the patches ---------------------------------------------------------------------------------


class _Operator:
    """The operator's access key, as moto's access-key classes present one."""

    def __init__(self, access_key_id: str, secret_access_key: str) -> None:
        self._access_key_id = access_key_id
        self._secret_access_key = secret_access_key
        self.arn = OPERATOR_ARN

    def create_credentials(self) -> Any:
        from botocore.credentials import Credentials

        return Credentials(self._access_key_id, self._secret_access_key)

    def collect_policies(self) -> list[str]:
        return [OPERATOR_POLICY]


def _authorize(response: Any, resource: str = "*") -> None:
    """moto's ``_authenticate_and_authorize_normal_action``, with the checks AWS makes."""
    from moto import settings
    from moto.core.authorization import ActionAuthenticatorMixin
    from moto.iam.access_control import IAMRequest

    checks_of = _checks_of(response)
    if checks_of is None or ActionAuthenticatorMixin.request_count < (
        settings.INITIAL_NO_AUTH_ACTION_COUNT
    ):
        _original_authorize(response, resource)
        return
    checks = checks_of(response, response._get_action())
    query = urlparse(response.uri).query
    path = response.raw_path + (f"?{query}" if query else "")
    for index, (action, checked) in enumerate(checks or [(response._get_action(), "*")]):
        request = IAMRequest(
            account_id=response.current_account,
            method=response.method,
            path=path,
            data=response.data,
            body=response.raw_body,
            headers=response.headers,
            action=action,
        )
        if index == 0:
            request.check_signature()
        request.check_action_permitted(checked)


#: moto's own method, for the requests it resolves itself (set by :func:`apply`).
_original_authorize: Callable[..., None]


def apply(operator_key: tuple[str, str], ledger: DenialLedger = DENIALS) -> None:
    """Patch moto (once per process; the server runs in this process): the checks above, the
    operator, and the ledger of denials."""
    global _original_authorize
    from moto.core.authorization import ActionAuthenticatorMixin
    from moto.core.exceptions import AccessDeniedError
    from moto.iam import access_control
    from moto.s3.exceptions import S3AccessDeniedError

    if getattr(access_control, _MARKER, False):
        return
    _original_authorize = ActionAuthenticatorMixin._authenticate_and_authorize_normal_action
    ActionAuthenticatorMixin._authenticate_and_authorize_normal_action = _authorize  # type: ignore[method-assign,assignment]

    create_access_key = access_control.create_access_key

    def create_key(account_id: str, partition: str, access_key_id: str, headers: Any) -> Any:
        if access_key_id == operator_key[0] and "X-Amz-Security-Token" not in headers:
            return _Operator(*operator_key)
        return create_access_key(account_id, partition, access_key_id, headers)

    access_control.create_access_key = create_key  # type: ignore[assignment]

    base = access_control.IAMRequestBase
    check_permitted = base.check_action_permitted
    check_trust = base._check_role_trust_relationship

    def check_action_permitted(self: Any, resource: str) -> None:
        try:
            check_permitted(self, resource)
        except Exception as error:
            if isinstance(error, AccessDeniedError | S3AccessDeniedError):
                key = self._access_key
                ledger.record(Denial(key._access_key_id, key.arn, self._action, resource))
            raise

    def check_role_trust(self: Any, role_arn: str) -> bool:
        if isinstance(self._access_key, _Operator):
            # The operator assumes a role as the service its trust policy names (moto compares
            # AWS principals only, and fails on a Service one).
            return bool(service_principals(self.backend.get_role_by_arn(role_arn)))
        return bool(check_trust(self, role_arn))

    base.check_action_permitted = check_action_permitted  # type: ignore[method-assign]
    base._check_role_trust_relationship = check_role_trust  # type: ignore[method-assign]
    setattr(access_control, _MARKER, True)


def service_principals(role: Any) -> set[str]:
    """The service principals a moto role's trust policy allows to assume it."""
    document = role.assume_role_policy_document
    statements = json.loads(document).get("Statement", []) if document else []
    found: set[str] = set()
    for statement in statements if isinstance(statements, list) else [statements]:
        if statement.get("Effect") != "Allow":
            continue
        services = (statement.get("Principal") or {}).get("Service", [])
        found.update([services] if isinstance(services, str) else services)
    return found


class _Enforcement:
    """Who holds moto's IAM enforcement on: the setting is one for the process, so it is on
    while any pipeline holds it and back to what it was when the last one lets go."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._holders = 0
        self._before: float = float("inf")

    def hold(self) -> None:
        with self._lock:
            self._holders += 1
            if self._holders == 1:
                self._before = _set_no_auth_count(0)

    def release(self) -> None:
        with self._lock:
            self._holders -= 1
            if self._holders == 0:
                _set_no_auth_count(self._before)


def _set_no_auth_count(count: float) -> float:
    """Set moto's ``INITIAL_NO_AUTH_ACTION_COUNT`` (0: every later request is checked) and
    restart its count, as moto's ``POST /moto-api/reset-auth`` does, in process (so it also holds
    for a stopped server); return the previous value."""
    from moto import settings
    from moto.core.authorization import ActionAuthenticatorMixin

    before = float(settings.INITIAL_NO_AUTH_ACTION_COUNT)
    settings.INITIAL_NO_AUTH_ACTION_COUNT = count
    ActionAuthenticatorMixin.request_count = 0
    return before


ENFORCEMENT = _Enforcement()


def iter_denials(mark: int, access_keys: set[str]) -> Iterator[Denial]:
    """The denials of ``access_keys`` recorded since ``mark``."""
    for denial in DENIALS.since(mark):
        if denial.access_key_id in access_keys:
            yield denial


def role_allows(
    role_name: str, action: str, resource: str, account_id: str = "123456789012"
) -> bool:
    """Whether moto's evaluator allows ``action`` on ``resource`` to a session of role
    ``role_name``, on its inline and attached policies (for a call the pipeline answers in
    process, such as a function invoking another)."""
    from moto.iam.access_control import IAMPolicy, PermissionResult
    from moto.iam.models import iam_backends

    backend = iam_backends[account_id]["aws"]
    policies: list[Any] = [
        backend.get_role_policy(role_name, name)[1]
        for name in backend.list_role_policies(role_name)
    ]
    policies += backend.list_attached_role_policies(role_name)[0]
    permitted = False
    for policy in policies:
        result = IAMPolicy(policy).is_action_permitted(action, resource)
        if result == PermissionResult.DENIED:
            return False
        permitted = permitted or result == PermissionResult.PERMITTED
    return permitted
