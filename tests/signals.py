"""Children a test stops with Ctrl-C (SIGINT, by PID)."""

from __future__ import annotations

import signal


def default_sigint() -> None:
    """``preexec_fn`` for a child that a test interrupts: a shell starts its background jobs
    (``cmd &``, ``nohup``) with SIGINT ignored, the child inherits that, and Python then installs
    no KeyboardInterrupt handler, so the test's SIGINT would do nothing. Reset it to the default,
    as a terminal's foreground job has it, whatever started the test run."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
