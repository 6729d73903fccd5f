"""The three command-line tools read alike: complete help (no sentence cut, every option
explained), the same options spelled the same way, and SIGTERM ending them as Ctrl-C does."""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from cdc_consumer.redrive.cli import build_parser as redrive_parser
from cdc_consumer.redrive.interrupts import EXIT_INTERRUPTED

from cdc_local.__main__ import build_parser as local_parser
from cdc_local.backfill_cli import build_parser as backfill_parser
from cdc_local.backfill_cli import main as backfill_main
from tests.signals import default_sigint

REPO_ROOT = Path(__file__).resolve().parents[2]


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


PARSERS = {
    "cdc-local": local_parser(),
    "cdc-redrive": redrive_parser(),
    "cdc-backfill": backfill_parser(),
    **{f"cdc-backfill {name}": sub for name, sub in _subcommands(backfill_parser()).items()},
}


def _options(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return {
        spelling: action
        for action in parser._actions
        for spelling in action.option_strings
        if spelling.startswith("--") and spelling != "--help"
    }


@pytest.mark.parametrize("name", sorted(PARSERS))
def test_help_is_complete(name: str) -> None:
    parser = PARSERS[name]
    description = " ".join((parser.description or "").split())
    assert description.endswith("."), f"{name}: description cut: {description!r}"
    undocumented = sorted({o for o, action in _options(parser).items() if not action.help})
    assert not undocumented, f"{name}: options without help: {undocumented}"
    parser.format_help()  # every help string formats (no stray %)


def test_cdc_local_help_says_the_whole_first_sentence() -> None:
    assert "run a synthesized stack's stream consumers on this machine, against moto's server" in (
        " ".join(local_parser().format_help().split())
    )


def test_the_same_option_is_spelled_the_same_way() -> None:
    backfill = _subcommands(backfill_parser())
    for parser in (local_parser(), backfill["local"]):
        options = _options(parser)
        assert {"--assembly", "--stack"} <= set(options)
        assert not options["--stack"].required  # inferred when the assembly has one stack
        assert options["--assembly"].default == "cdk.out"
    for parser in (redrive_parser(), *backfill.values()):
        assert "--consumer-name" in _options(parser), parser.prog
    for parser in (redrive_parser(), backfill["start"], backfill["watch"]):
        assert "--endpoint-url" in _options(parser), parser.prog
    # The former spelling still works where docs and scripts used it.
    assert "--consumer" in _options(backfill["local"])


def test_cdc_backfill_local_infers_the_stack_or_asks_for_it(
    assembly_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert backfill_main(["local", "--assembly", str(assembly_dir)]) == 2
    error = capsys.readouterr().err
    assert "stacks" in error and "name the one to run with --stack" in error


def test_a_backfill_watch_stopped_by_ctrl_c_exits_130_saying_the_execution_runs_on(
    capsys: pytest.CaptureFixture[str],
) -> None:
    class Interrupted:
        def describe_execution(self, **_: object) -> dict:
            raise KeyboardInterrupt

    code = backfill_main(
        ["watch", "--execution-arn", "arn:x"], clients=lambda name, **_: Interrupted()
    )
    assert code == EXIT_INTERRUPTED
    assert "the execution keeps running on AWS" in capsys.readouterr().err


def _serve(assembly_dir: Path) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT), str(REPO_ROOT / "lambda_src")])
    return subprocess.Popen(
        [sys.executable, "-m", "cdc_local", "--assembly", str(assembly_dir), "--stack", "Basic"],
        cwd=REPO_ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=default_sigint,
    )


@pytest.mark.slow
@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_sigterm_and_ctrl_c_end_serve_mode_alike(assembly_dir: Path, stop: signal.Signals) -> None:
    """The same last line (the counters, JSON) and exit 0, whichever signal; stdout holds only
    serve mode's facts."""
    process = _serve(assembly_dir)
    assert process.stdout is not None
    lines = []
    try:
        for line in process.stdout:
            lines.append(line.rstrip("\n"))
            if "Ctrl-C stops" in line:
                break
        process.send_signal(stop)
        stdout, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, stderr[-3000:]
    last = stdout.strip().splitlines()[-1]
    assert isinstance(json.loads(last), dict), stdout
    assert lines[0].startswith("local endpoint: AWS_ENDPOINT_URL="), lines
    assert "Traceback" not in stderr, stderr[-3000:]
