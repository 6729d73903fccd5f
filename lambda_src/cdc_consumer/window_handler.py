"""The handler of a consumer function whose mapping has a tumbling window.

Lambda counts an answer to a windowed event without ``state`` as a failed invocation. A handler
built on :class:`~cdc_consumer.StreamProcessor` or :class:`~cdc_consumer.ConsumerGroup` answers
it; a handler written otherwise (one that returns ``{"batchItemFailures": []}`` itself, or None)
would have every invocation failed once ``StreamConsumer`` gives its mapping a window by
default. So ``StreamConsumer`` sets a function it makes to this handler
(:data:`~cdc_consumer.handler_paths.WINDOW_HANDLER`) and names the function's own handler in
:data:`~cdc_consumer.environment_variables.USER_HANDLER_ENV`: this imports it once, calls it with
the event
and context as they are, and adds an empty ``state`` when the answer lacks one
(:func:`cdc_consumer.windows.answer`). Lambda's own handler setting works the same way (the
module is imported from the function's code, ``module.function`` with a dotted module for a
package), which is why it is resolved with :mod:`importlib` rather than anything of ours.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from typing import Any

from cdc_consumer.environment_variables import USER_HANDLER_ENV
from cdc_consumer.exceptions import ConfigurationError
from cdc_consumer.windows import answer

_resolved: dict[str, Callable[[Any, Any], Any]] = {}


def handler(event: Any, context: Any) -> Any:
    """Run the function's own handler on ``event``; its answer, with ``state`` when windowed."""
    return answer(event, _own_handler()(event, context))


def _own_handler() -> Callable[[Any, Any], Any]:
    name = os.environ.get(USER_HANDLER_ENV, "")
    if name in _resolved:
        return _resolved[name]
    module_name, _, attribute = name.replace("/", ".").rpartition(".")
    if not module_name:
        raise ConfigurationError(
            f"{USER_HANDLER_ENV} is {name!r}; it names the function's own handler as "
            "module.function (StreamConsumer sets it from its handler prop)"
        )
    function = getattr(importlib.import_module(module_name), attribute, None)
    if not callable(function):
        raise ConfigurationError(
            f"{USER_HANDLER_ENV} names {name!r}, but module {module_name!r} has no callable "
            f"{attribute!r}"
        )
    _resolved[name] = function
    return function
