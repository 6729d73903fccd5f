"""A configuration error under ``cdk synth``: its message first, without a traceback wall.

The CDK CLI runs the app as a child process and prints what it writes to stderr. An uncaught
:class:`~cdc_constructs.CdcConfigurationError` would print Python's traceback, dozens of
aws-cdk-lib and jsii frames, before the one line that says which prop to fix. Importing
``cdc_constructs`` therefore installs an exception hook, only when the process is a CDK app run
by the CLI (the CLI sets ``CDK_OUTDIR``), that prints for such an error:

    StreamConsumer 'Orders': 1 invalid prop:
      - retry_attempts=-1: a number in 0..10000; ...
    (raised at app.py:12; set CDC_TRACEBACK=1 for the full traceback)

and the app exits with status 1, as for any uncaught error. Every other exception, and every
process not run by the CLI (tests, scripts, notebooks), keeps Python's own hook. A user's app
needs no code for it: importing the library is enough. ``CDC_TRACEBACK=1`` restores the full
traceback.
"""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

from cdc_constructs.exceptions import CdcConfigurationError

__all__ = ["install_synth_error_hook", "short_report"]

_LIBRARY_DIR = Path(__file__).resolve().parent

ExceptHook = Callable[[type[BaseException], BaseException, TracebackType | None], object]


def short_report(error: CdcConfigurationError, trace: TracebackType | None) -> str:
    """The error's message, then where the user's code raised it."""
    where = _user_frame(trace)
    hint = "set CDC_TRACEBACK=1 for the full traceback"
    return f"{error}\n({f'raised at {where}; ' if where else ''}{hint})\n"


def install_synth_error_hook(environ: dict[str, str] | None = None) -> bool:
    """Install the hook when running under the CDK CLI (``CDK_OUTDIR`` set) and
    ``CDC_TRACEBACK`` is not; returns whether it did. Idempotent."""
    environ = dict(os.environ) if environ is None else environ
    if "CDK_OUTDIR" not in environ or environ.get("CDC_TRACEBACK") == "1":
        return False
    if getattr(sys.excepthook, "_cdc_synth_errors", False):
        return True
    sys.excepthook = _hook(sys.excepthook)
    return True


def _hook(previous: ExceptHook) -> ExceptHook:
    def hook(
        kind: type[BaseException], error: BaseException, trace: TracebackType | None
    ) -> object:
        if not isinstance(error, CdcConfigurationError):
            return previous(kind, error, trace)
        sys.stderr.write(short_report(error, trace))
        sys.stderr.flush()
        return None  # the interpreter then exits with status 1, as for any uncaught error

    hook._cdc_synth_errors = True  # type: ignore[attr-defined]
    return hook


def _user_frame(trace: TracebackType | None) -> str | None:
    """``file:line`` of the innermost frame outside this library (the user's construct call)."""
    found = None
    for frame in traceback.extract_tb(trace):
        path = Path(frame.filename).resolve()
        if _LIBRARY_DIR not in path.parents and "site-packages" not in path.parts:
            found = f"{frame.filename}:{frame.lineno}"
    return found
