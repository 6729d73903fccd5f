"""How the command-line tools end when asked to stop: SIGTERM (``kill``, a container or CI
stopping the process) ends them exactly as Ctrl-C (SIGINT) does.

Each tool turns both into a ``KeyboardInterrupt`` and handles it in one place, so it prints the
same last line and exits with the same status whichever signal came: ``cdc-local``, a server,
prints its counters and exits 0 (stopped as asked); ``cdc-redrive`` and ``cdc-backfill``, jobs,
say what was left undone and exit :data:`EXIT_INTERRUPTED` (130, the shell's 128 + SIGINT).
"""

from __future__ import annotations

import signal
import threading
from types import FrameType

__all__ = ["EXIT_INTERRUPTED", "sigterm_as_keyboard_interrupt"]

EXIT_INTERRUPTED = 130
"""A job stopped before it finished, by Ctrl-C or SIGTERM (128 + SIGINT, as a shell reports
Ctrl-C)."""


def _interrupt(signum: int, _frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}")


def sigterm_as_keyboard_interrupt() -> None:
    """From now on, SIGTERM raises ``KeyboardInterrupt`` in the main thread, as Ctrl-C does
    (nothing to do when called from another thread, which cannot take signals)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _interrupt)
