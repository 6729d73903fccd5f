"""Run a Lambda function's Python handler in this process, as Lambda would run it.

Each function gets its own copy of the modules its code and layers provide: while it is imported
or invoked, ``sys.path`` starts with its asset directory and each layer's ``python/`` directory, and
``sys.modules`` holds that function's modules only; afterwards the process's own modules come back.
So two functions that both use ``index.handler`` (or two versions of one layer) never share a
module.
The function's environment and the endpoint's are set in ``os.environ`` for the invocation.
``sys.path``, ``sys.modules`` and ``os.environ`` are process-wide, so one function's code runs at
a time (:mod:`cdc_local.function_room`): invocations of one function on several threads run at
once, sharing its warm modules; the mapping's own lanes are interleaved on one thread.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import sys
import threading
import time
import traceback
import uuid
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import boto3

from cdc_local.assembly import FunctionSpec
from cdc_local.endpoint import patched_environ
from cdc_local.exceptions import FunctionLoadError
from cdc_local.function_room import ROOM

#: Guards the functions' invocation and error counts (invocations may run on several threads).
_COUNTS = threading.Lock()


class InvocationFaults(Protocol):
    """Fault injection around an invocation (see :mod:`cdc_local.faults`)."""

    def during(self, function_name: str) -> contextlib.AbstractContextManager[None]: ...

    def lose_response(self) -> bool: ...


@dataclass
class LambdaContext:
    """The context object Lambda passes to a Python handler.

    ``get_remaining_time_in_millis`` counts down from the function's ``Timeout``; ``clock_speed``
    makes emulated time run faster than the wall clock (1.0 = real time), so tests can reach a
    deadline without waiting for it.
    """

    function_name: str
    invoked_function_arn: str
    memory_limit_in_mb: int
    timeout_seconds: float
    clock: Callable[[], float] = time.monotonic
    clock_speed: float = 1.0
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    function_version: str = "$LATEST"
    log_group_name: str = ""
    log_stream_name: str = "local"
    _started: float = field(default=0.0, repr=False)

    def __post_init__(self) -> None:
        self._started = self.clock()
        self.log_group_name = self.log_group_name or f"/aws/lambda/{self.function_name}"

    def elapsed_seconds(self) -> float:
        return (self.clock() - self._started) * self.clock_speed

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self.timeout_seconds - self.elapsed_seconds()) * 1000))


class InvocationFailed(Exception):
    """A function error, raised by :meth:`LocalFunction.as_handler` handlers. ``error_type``:
    the ``errorType`` Lambda would report (the handler's exception's class name), which a
    caller decides on as it would on AWS (a backfill refusal, say), not on this class's."""

    def __init__(self, message: str, error_type: str | None = None) -> None:
        super().__init__(message)
        self.error_type = error_type


@dataclass(frozen=True)
class InvocationResult:
    """What one invocation returned: the response, or the error Lambda would report."""

    request_id: str
    response: Any = None
    error_type: str | None = None
    error_message: str | None = None
    output: str = ""

    @property
    def failed(self) -> bool:
        return self.error_type is not None


@dataclass
class LocalFunction:
    """One Lambda function of the stack, runnable in-process."""

    spec: FunctionSpec
    name: str
    arn: str
    environment: Mapping[str, str]
    layer_dirs: tuple[Path, ...] = ()
    endpoint_environment: Mapping[str, str] = field(default_factory=dict)
    #: The function's role session, as Lambda sets it (``AWS_ACCESS_KEY_ID``, ...): its calls
    #: are checked against that role's policies when IAM is enforced; none: the endpoint's.
    credentials: Mapping[str, str] = field(default_factory=dict)
    #: Called after each invocation, before its result is used: raises when the function made a
    #: call it is not allowed (:class:`cdc_local.exceptions.AccessDeniedError`).
    check_access: Callable[[LocalFunction], None] | None = None
    #: Called with the function's own boto3 default session when it is made (the pipeline
    #: answers ``lambda.Invoke`` of the stack's functions there: cdc_local.lambda_invoke).
    boto3_setup: Callable[[Any], None] | None = None
    clock: Callable[[], float] = time.monotonic
    clock_speed: float = 1.0
    capture_output: bool = False
    faults: InvocationFaults | None = None
    invocations: int = 0
    errors: int = 0
    outputs: deque[str] = field(default_factory=deque, repr=False)
    _modules: dict[str, Any] = field(default_factory=dict, repr=False)
    _handler: Callable[[Any, Any], Any] | None = field(default=None, repr=False)
    _boto3_session: Any = field(default=None, repr=False)

    @property
    def code_dirs(self) -> tuple[Path, ...]:
        """The handler's asset directory, then each layer's ``python/`` directory, in order."""
        return (self.spec.asset_dir, *(d / "python" for d in self.layer_dirs))

    def invoke(self, event: Mapping[str, Any]) -> InvocationResult:
        """Invoke the handler with ``event``. Errors are returned, not raised, as Lambda reports
        them: an exception, a timeout (emulated time past ``Timeout``), or a lost response.
        With ``capture_output``, what the handler printed is also queued on ``outputs``."""
        result = self._invoke(event)
        if self.capture_output and result.output:
            self.outputs.append(result.output)
        return result

    def as_handler(self) -> Callable[[Any, Any], Any]:
        """This function as a plain ``handler(event, context)`` (interfaces §9), for code that
        invokes consumers through that contract (such as redrive): a failed invocation raises
        :class:`InvocationFailed`, as a function error would surface."""

        def handler(event: Any, _context: Any) -> Any:
            result = self.invoke(event)
            if result.failed:
                raise InvocationFailed(
                    f"{self.name}: {result.error_type}: {result.error_message}",
                    result.error_type,
                )
            return result.response

        handler.__name__ = self.name
        return handler

    def _invoke(self, event: Mapping[str, Any]) -> InvocationResult:
        context = LambdaContext(
            function_name=self.name,
            invoked_function_arn=self.arn,
            memory_limit_in_mb=self.spec.memory_mb,
            timeout_seconds=self.spec.timeout_seconds,
            clock=self.clock,
            clock_speed=self.clock_speed,
        )
        output = io.StringIO()
        with _COUNTS:
            self.invocations += 1
        with ROOM.holding(self, output if self.capture_output else None):
            try:
                handler = self._load()
                faults = self.faults.during(self.name) if self.faults else contextlib.nullcontext()
                with faults:
                    response = handler(event, context)
            except FunctionLoadError:
                raise
            except BaseException as error:  # a crash of any kind fails the invocation
                if isinstance(error, KeyboardInterrupt):
                    raise
                self._check_access()
                self._count_error()
                traceback.print_exc(file=output)
                return InvocationResult(
                    context.aws_request_id,
                    None,
                    type(error).__name__,
                    str(error),
                    output.getvalue(),
                )
        self._check_access()
        if context.elapsed_seconds() > self.spec.timeout_seconds:
            self._count_error()
            return InvocationResult(
                context.aws_request_id,
                None,
                "Sandbox.Timedout",
                f"Task timed out after {self.spec.timeout_seconds:.2f} seconds",
                output.getvalue(),
            )
        if self.faults is not None and self.faults.lose_response():
            self._count_error()
            return InvocationResult(
                context.aws_request_id,
                None,
                "LostResponse",
                "the response never reached the poller",
                output.getvalue(),
            )
        return InvocationResult(context.aws_request_id, response, output=output.getvalue())

    def _count_error(self) -> None:
        with _COUNTS:
            self.errors += 1

    @property
    def cold(self) -> bool:
        """Whether the handler is not imported yet (its next invocation is a cold start)."""
        return self._handler is None

    def _check_access(self) -> None:
        if self.check_access is not None:
            self.check_access(self)

    def _load(self) -> Callable[[Any, Any], Any]:
        if self._handler is None:
            module_name, _, attribute = self.spec.handler.replace("/", ".").rpartition(".")
            try:
                module = importlib.import_module(module_name)
            except Exception as error:
                raise FunctionLoadError(
                    f"function {self.spec.logical_id}: cannot import handler module "
                    f"{module_name!r} "
                    f"(Handler {self.spec.handler!r}) from {[str(d) for d in self.code_dirs]}: "
                    f"{type(error).__name__}: {error}"
                ) from error
            handler = getattr(module, attribute, None)
            if not callable(handler):
                raise FunctionLoadError(
                    f"function {self.spec.logical_id}: module {module_name!r} has no callable "
                    f"{attribute!r} (Handler {self.spec.handler!r})"
                )
            self._handler = handler
        return self._handler

    @contextlib.contextmanager
    def isolated(self) -> Iterator[None]:
        """This function's sys.path, modules and environment, for the duration of the block."""
        provided = _top_level_names(self.code_dirs)
        saved = {n: m for n, m in sys.modules.items() if n.partition(".")[0] in provided}
        for n in saved:
            del sys.modules[n]
        sys.modules.update(self._modules)
        paths = [str(d) for d in self.code_dirs]
        sys.path[0:0] = paths
        environment = {
            **self.endpoint_environment,
            "AWS_LAMBDA_FUNCTION_NAME": self.name,
            "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(self.spec.memory_mb),
            "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
            "AWS_LAMBDA_LOG_GROUP_NAME": f"/aws/lambda/{self.name}",
            "LAMBDA_TASK_ROOT": str(self.spec.asset_dir),
            **self.credentials,
            **self.environment,
        }
        # boto3's default session keeps the credentials it first found: each function has its
        # own, so a client made by boto3.client() in its code uses its role's credentials.
        saved_session, boto3.DEFAULT_SESSION = boto3.DEFAULT_SESSION, self._boto3_session
        try:
            with patched_environ(environment):
                if boto3.DEFAULT_SESSION is None and self.boto3_setup is not None:
                    boto3.setup_default_session()
                    self.boto3_setup(boto3.DEFAULT_SESSION)
                yield
        finally:
            self._boto3_session, boto3.DEFAULT_SESSION = boto3.DEFAULT_SESSION, saved_session
            for p in paths:
                sys.path.remove(p)
            self._modules = {
                n: m for n, m in sys.modules.items() if n.partition(".")[0] in provided
            }
            for n in self._modules:
                del sys.modules[n]
            sys.modules.update(saved)


def _top_level_names(directories: tuple[Path, ...]) -> set[str]:
    names = set()
    for directory in directories:
        if not directory.is_dir():
            continue
        for entry in directory.iterdir():
            if entry.suffix == ".py":
                names.add(entry.stem)
            elif entry.is_dir() and entry.name.isidentifier() and entry.name != "__pycache__":
                names.add(entry.name)
    return names
