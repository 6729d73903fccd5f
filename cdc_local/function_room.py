"""The process-wide state an in-process invocation needs, held by one function at a time.

A handler runs in this process (:mod:`cdc_local.functions`) with its function's ``sys.path``,
``sys.modules``, ``os.environ`` and boto3 default session, all process-wide. The room is that
state: one function holds it at a time, and any number of that function's invocations may run
in it at once on as many threads, as Lambda runs one function's invocations side by side (two
deliveries of one shard's records: a mapping and its replacement, a redrive beside the
mapping, a retry while the first attempt still runs). Their requests interleave at the
endpoint, which serializes each DynamoDB request as DynamoDB isolates it
(:mod:`cdc_local.request_lock`).

They share the function's warm modules, where Lambda would give each its own execution
environment: what a handler keeps between invocations must be safe to share (the consumer
runtime keeps clients, which are thread-safe, and caches of what DynamoDB already holds). So:

- a function's first invocation (its cold start: the handler's import, its module-level setup)
  runs alone; the others wait for it;
- an invocation of another function waits until the room is empty;
- an invocation made from inside another on the same thread (Lambda's Invoke answered in
  process, :mod:`cdc_local.lambda_invoke`) of another function swaps that function in when its
  thread is the only one in the room, and is refused beside invocations on other threads (the
  swap would take their modules from under them);
- while the room is held, ``sys.stdout`` and ``sys.stderr`` are routed by thread: what an
  invocation prints goes to its own output, what other threads print where it went before.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol, TextIO

from cdc_local.exceptions import LocalPipelineError

__all__ = ["ROOM", "FunctionRoom", "Isolated"]


class Isolated(Protocol):
    """A function as the room sees it (:class:`cdc_local.functions.LocalFunction`)."""

    name: str

    @property
    def cold(self) -> bool: ...

    def isolated(self) -> contextlib.AbstractContextManager[None]: ...


@dataclass
class _Level:
    """A function whose state the room holds; a level above the first is one thread's nested
    invocation, which runs alone."""

    function: Isolated
    alone: bool
    exit: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)


class FunctionRoom:
    """See the module docstring; :data:`ROOM` is the process's."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._levels: list[_Level] = []
        #: Invocations running in the room, by thread.
        self._threads: Counter[int] = Counter()
        self._streams = _RoutedStreams()

    @contextlib.contextmanager
    def holding(self, function: Isolated, output: TextIO | None) -> Iterator[None]:
        """Run the block as an invocation of ``function`` in the room; what it prints goes to
        ``output`` (None: standard error)."""
        me = threading.get_ident()
        pushed = self._enter(function, me)
        try:
            with self._streams.to(output):
                yield
        finally:
            self._leave(me, pushed)

    def _enter(self, function: Isolated, me: int) -> bool:
        """Wait for the room and take a place in it; whether a level was pushed."""
        with self._changed:
            while True:
                if me in self._threads and self._levels[-1].function is not function:
                    if len(self._threads) > 1:
                        raise LocalPipelineError(
                            f"function {self._levels[-1].function.name} invoked "
                            f"{function.name} in process while other invocations of it run on "
                            f"other threads ({len(self._threads) - 1}); the local pipeline runs "
                            "one function's code at a time: invoke it from one thread"
                        )
                    self._push(function, alone=True)
                    pushed = True
                    break
                if not self._levels:
                    self._push(function, alone=function.cold)
                    pushed = True
                    break
                top = self._levels[-1]
                if top.function is function and (me in self._threads or not top.alone):
                    pushed = False
                    break
                self._changed.wait()
            self._threads[me] += 1
            return pushed

    def _push(self, function: Isolated, *, alone: bool) -> None:
        level = _Level(function, alone)
        if not self._levels:
            level.exit.enter_context(self._streams.installed())
        try:
            level.exit.enter_context(function.isolated())
        except BaseException:
            level.exit.close()
            raise
        self._levels.append(level)

    def _leave(self, me: int, pushed: bool) -> None:
        with self._changed:
            self._threads[me] -= 1
            if not self._threads[me]:
                del self._threads[me]
            if (pushed and len(self._levels) > 1) or not self._threads:
                self._levels.pop().exit.close()
            self._changed.notify_all()


class _RoutedStreams:
    """``sys.stdout`` and ``sys.stderr`` routed by thread while the room is held."""

    def __init__(self) -> None:
        self._local = threading.local()
        self._original: tuple[TextIO, TextIO] | None = None

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        self._original = (sys.stdout, sys.stderr)
        sys.stdout = _Routed(self._target(0))  # type: ignore[assignment]
        sys.stderr = _Routed(self._target(1))  # type: ignore[assignment]
        try:
            yield
        finally:
            sys.stdout, sys.stderr = self._original
            self._original = None

    @contextlib.contextmanager
    def to(self, output: TextIO | None) -> Iterator[None]:
        """Inside the block, this thread's writes go to ``output`` (None: standard error)."""
        stack = self._local.__dict__.setdefault("stack", [])
        stack.append(output)
        try:
            yield
        finally:
            stack.pop()

    def _target(self, index: int) -> Callable[[], TextIO]:
        def target() -> TextIO:
            original = self._original or (sys.__stdout__, sys.__stderr__)
            stack = getattr(self._local, "stack", None)
            if not stack:
                return original[index]  # type: ignore[return-value]
            return stack[-1] or original[1]  # type: ignore[return-value]

        return target


class _Routed:
    """A text stream that writes where ``target()`` says at each call."""

    def __init__(self, target: Callable[[], TextIO]) -> None:
        self._target = target

    def write(self, text: str) -> int:
        return self._target().write(text)

    def flush(self) -> None:
        self._target().flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._target(), name)


#: The process's room: every :class:`cdc_local.functions.LocalFunction` invocation takes it.
ROOM = FunctionRoom()
