"""``python -m deploy_local`` (``make deploy-local``): deploy the reference stack to MiniStack
with the real CDK CLI and exercise it; see :mod:`deploy_local.flow`.

Exit codes: 0 when everything held; 1 when a step failed (one line names the step and its log)
or a check did not hold (the summary says which); 130 on Ctrl-C. The emulator is stopped in
every case.
"""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from types import FrameType

from deploy_local.emulator import READY_TIMEOUT_SECONDS
from deploy_local.emulator_venv import EmulatorVenv
from deploy_local.exceptions import StepFailed
from deploy_local.flow import STACK_NAME, Options, run
from deploy_local.paths import DEFAULT_WORKDIR


def parse_arguments(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m deploy_local", description=(__doc__ or "").split("\n")[0]
    )
    parser.add_argument("--stack", default=STACK_NAME, help="stack to deploy")
    parser.add_argument("--port", type=int, help="MiniStack's port (default: a free one)")
    parser.add_argument(
        "--workdir", type=Path, default=DEFAULT_WORKDIR, help="logs and cloud assemblies"
    )
    parser.add_argument("--changes", type=int, default=60, help="order changes to write")
    parser.add_argument("--seed", type=int, default=0, help="workload seed")
    parser.add_argument(
        "--wait", type=float, default=60.0, help="seconds to wait for the view and quarantine"
    )
    parser.add_argument(
        "--assembly", type=Path, help="deploy this cloud assembly instead of synthesizing"
    )
    parser.add_argument(
        "--ready-timeout",
        type=float,
        default=READY_TIMEOUT_SECONDS,
        help="seconds MiniStack may take to start",
    )
    parser.add_argument(
        "--install-emulator",
        action="store_true",
        help="only make MiniStack's virtualenv (requirements-ministack.txt), then exit",
    )
    return parser.parse_args(argv)


def _interrupt(signum: int, _frame: FrameType | None) -> None:
    # SIGTERM (e.g. from make or CI) ends the run like Ctrl-C: the emulator is stopped first.
    raise KeyboardInterrupt(signal.Signals(signum).name)


def main(argv: Sequence[str] | None = None) -> int:
    arguments = parse_arguments(argv)
    signal.signal(signal.SIGTERM, _interrupt)
    if arguments.install_emulator:
        return _install(arguments.workdir)
    options = Options(
        stack=arguments.stack,
        port=arguments.port,
        workdir=arguments.workdir,
        changes=arguments.changes,
        seed=arguments.seed,
        wait_seconds=arguments.wait,
        assembly=arguments.assembly,
        ready_timeout=arguments.ready_timeout,
    )
    try:
        summary = run(options, progress=lambda line: print(line, flush=True))
    except StepFailed as failure:
        print(failure.line(), file=sys.stderr)
        print("deploy-local: emulator stopped", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("deploy-local: interrupted; emulator stopped", file=sys.stderr)
        return 130
    print(summary.table())
    print(summary.json_line())
    return 0 if summary.ok else 1


def _install(workdir: Path) -> int:
    try:
        venv = EmulatorVenv.default().ensure(workdir / "install-ministack.log")
    except StepFailed as failure:
        print(failure.line(), file=sys.stderr)
        return 1
    print(f"MiniStack virtualenv ready: {venv.path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
