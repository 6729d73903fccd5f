"""Lambda's ``Invoke`` API for the stack's own functions, in process.

moto's Lambda runs functions in containers; the local pipeline runs them in this process. So a
function that invokes another function of the stack (the redrive invokes its consumer) has its
boto3 ``lambda`` client's ``Invoke`` answered here, before any request is sent: with IAM
enforced, the caller's role must allow ``lambda:InvokeFunction`` on the target's ARN (moto's
evaluator, on the role's policies; a denial is recorded like any other), then the target runs
in-process (:meth:`cdc_local.functions.LocalFunction.invoke`) and its response, or its function
error, comes back as Lambda returns them. Any other call of the client goes to the endpoint.
"""

from __future__ import annotations

import io
import json
import urllib.parse
from collections.abc import Callable, Mapping
from typing import Any

from botocore.awsrequest import AWSResponse
from botocore.response import StreamingBody

from cdc_local.authorization import DENIALS, Denial, role_allows
from cdc_local.roles import RoleSession

INVOKE_ACTION = "lambda:InvokeFunction"


class LocalInvoke:
    """The ``before-call.lambda.Invoke`` handler of one calling function's boto3 session.

    ``functions``: the stack's functions by name and by ARN (looked up at each call);
    ``session``: the caller's role session (None: IAM is not enforced).
    """

    def __init__(
        self, functions: Callable[[], Mapping[str, Any]], session: RoleSession | None
    ) -> None:
        self.functions = functions
        self.session = session

    def register(self, boto3_session: Any) -> None:
        boto3_session.events.register("before-call.lambda.Invoke", self)

    def __call__(self, params: Mapping[str, Any], **_: Any) -> tuple[AWSResponse, dict[str, Any]]:
        # ``params`` is the serialized request: /2015-03-31/functions/<name>/invocations, the
        # payload as its body.
        name = urllib.parse.unquote(str(params.get("url_path", "")).split("/functions/", 1)[-1])
        name = name.split("/", 1)[0]
        target = self.functions().get(name)
        if target is None:
            return _error(404, "ResourceNotFoundException", f"Function not found: {name}")
        if self.session is not None and not role_allows(
            self.session.role_name, INVOKE_ACTION, target.arn
        ):
            DENIALS.record(
                Denial(
                    self.session.access_key_id,
                    self.session.role_arn,
                    INVOKE_ACTION,
                    target.arn,
                )
            )
            return _error(
                403,
                "AccessDeniedException",
                f"User: {self.session.role_arn} is not authorized to perform: {INVOKE_ACTION} "
                f"on resource: {target.arn}",
            )
        payload = params.get("body") or b"{}"
        if isinstance(payload, str):
            payload = payload.encode()
        elif hasattr(payload, "read"):
            payload = payload.read()
        result = target.invoke(json.loads(payload or b"{}"))
        body: Any = result.response
        parsed: dict[str, Any] = {"StatusCode": 200, "ExecutedVersion": "$LATEST"}
        if result.failed:
            body = {"errorType": result.error_type, "errorMessage": result.error_message}
            parsed["FunctionError"] = "Unhandled"
        raw = json.dumps(body, default=str).encode()
        parsed["Payload"] = StreamingBody(io.BytesIO(raw), len(raw))
        return AWSResponse("local", 200, {}, None), parsed


def _error(status: int, code: str, message: str) -> tuple[AWSResponse, dict[str, Any]]:
    parsed = {"Error": {"Code": code, "Message": message}, "ResponseMetadata": {}}
    return AWSResponse("local", status, {}, None), parsed
