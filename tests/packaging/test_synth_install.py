"""`make synth` installs everything the synthesized app imports.

The README's first command on a fresh clone is `make synth`. It once failed there with
``No module named 'botocore'``: the synth install had no boto3 (only the test requirements
did), and every test ran in the test environment, so nothing could see it. This test asks the
Makefile what `make synth` would install on a fresh machine (``make -n`` with a virtualenv that
does not exist, so every install step is printed), resolves that to the set of distributions
it brings (the requirement files, the editable install's declared dependencies and extras unless
it is ``--no-deps``, and their dependencies, read from the installed metadata), and synthesizes
the app in a fresh interpreter in which every module of a distribution outside that set cannot
be imported: the synthesis fails, naming the module, if the app needs one.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import tomllib
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO_ROOT = Path(__file__).resolve().parents[2]

# The seed distributions `python -m venv` installs on Python 3.11 (ensurepip): the fresh
# virtualenv has them before make installs anything (setuptools' .pth imports _distutils_hack).
VENV_SEED = ("pip", "setuptools")

# Run in a fresh interpreter: hides every top-level module named in argv[1] (a JSON list: the
# modules only distributions outside the synth install provide), as if they were not
# installed, then synthesizes the reference app (both stacks, all nag packs). An optional
# import (try/except ImportError, e.g. botocore's certifi) falls back as it would on a fresh
# machine; a required one fails the synthesis with the module's name.
SYNTH_WITHOUT = """
import json, sys, tempfile
from importlib.abc import MetaPathFinder

HIDDEN = frozenset(json.loads(sys.argv[1]))

class NotInstalled(MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in HIDDEN:
            raise ModuleNotFoundError(
                f"No module named {name!r} (make synth does not install it)", name=name
            )
        return None

sys.meta_path.insert(0, NotInstalled())
import aws_cdk as cdk
import app
with tempfile.TemporaryDirectory() as outdir:
    app.build_app(cdk.App(outdir=outdir)).synth()
"""


@dataclass
class SynthInstall:
    """What the synth install names: requirements (with extras) and whether the checkout itself
    is installed, with its declared dependencies or not."""

    requirements: list[Requirement] = field(default_factory=list)
    installs_checkout: bool = False


def synth_install_commands(venv: Path) -> list[list[str]]:
    """The pip install commands `make synth` runs on a machine whose virtualenv is ``venv``."""
    done = subprocess.run(
        ["make", "-n", "-B", "synth", f"VENV={venv}"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return [shlex.split(line) for line in done.stdout.splitlines() if "pip install" in line]


def requirement_file(path: Path) -> list[Requirement]:
    """The requirements of a pip requirements file, following ``-r`` includes."""
    found: list[Requirement] = []
    for raw in path.read_text().splitlines():
        line = raw.partition("#")[0].strip()
        if not line:
            continue
        if line.startswith(("-r ", "--requirement ")):
            found += requirement_file(path.parent / line.split(maxsplit=1)[1])
        elif not line.startswith("-"):
            found.append(Requirement(line))
    return found


def checkout_requirements(extras_spec: str) -> list[Requirement]:
    """pyproject.toml's dependencies plus those of the extras in ``.[a,b]``."""
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    extras = extras_spec.partition("[")[2].rstrip("]")
    names = [name.strip() for name in extras.split(",") if name.strip()]
    declared = list(project.get("dependencies", []))
    for name in names:
        declared += project.get("optional-dependencies", {})[name]
    return [Requirement(spec) for spec in declared]


def parse_install(commands: list[list[str]]) -> SynthInstall:
    install = SynthInstall()
    for words in commands:
        no_deps = "--no-deps" in words
        args = iter(words[words.index("install") + 1 :])
        for word in args:
            if word in ("-r", "--requirement"):
                install.requirements += requirement_file(REPO_ROOT / next(args))
            elif word in ("-e", "--editable") or not word.startswith("-"):
                spec = next(args) if word.startswith("-") else word
                if spec.startswith("."):
                    install.installs_checkout = True
                    if not no_deps:
                        install.requirements += checkout_requirements(spec)
                else:
                    install.requirements.append(Requirement(spec))
    return install


def distribution_closure(requirements: list[Requirement]) -> set[str]:
    """Every distribution the requirements bring, transitively, from the installed metadata."""
    seen: set[str] = set()
    pending = [(requirement, frozenset(requirement.extras)) for requirement in requirements]
    while pending:
        requirement, extras = pending.pop()
        name = canonicalize_name(requirement.name)
        key = f"{name}[{','.join(sorted(extras))}]"
        if key in seen:
            continue
        seen.add(key)
        seen.add(name)
        for spec in metadata.distribution(name).requires or []:
            dependency = Requirement(spec)
            if dependency.marker and not any(
                dependency.marker.evaluate({**default_environment(), "extra": extra})
                for extra in (extras or {""})
            ):
                continue
            pending.append((dependency, frozenset(dependency.extras)))
    return {key for key in seen if "[" not in key}


def hidden_modules(install: SynthInstall) -> list[str]:
    """Top-level modules of this environment that the synth install would not bring: those
    every owning distribution of which is outside the install's closure."""
    provided = distribution_closure(install.requirements) | set(VENV_SEED)
    if install.installs_checkout:
        project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
        provided.add(canonicalize_name(project["name"]))
    owners = metadata.packages_distributions()
    return sorted(
        module
        for module, dists in owners.items()
        if not {canonicalize_name(dist) for dist in dists} & provided
    )


def synthesize_without(hidden: list[str]) -> subprocess.CompletedProcess[str]:
    """Synthesizes the reference app in a fresh interpreter with ``hidden`` not importable."""
    environment = {**os.environ, "PYTHONPATH": f"{REPO_ROOT}{os.pathsep}{REPO_ROOT / 'lambda_src'}"}
    return subprocess.run(
        [sys.executable, "-c", SYNTH_WITHOUT, json.dumps(hidden)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env=environment,
    )


def test_the_synth_install_brings_every_module_the_synthesized_app_imports(tmp_path):
    install = parse_install(synth_install_commands(tmp_path / "fresh-venv"))
    assert install.requirements, "make -n synth printed no pip install: is the recipe still there?"
    assert install.installs_checkout, "make synth no longer installs this checkout (the library)"
    done = synthesize_without(hidden_modules(install))
    assert done.returncode == 0, (
        "the synthesized app needs a module `make synth` does not install on a fresh machine; "
        "declare it in pyproject.toml (dependencies or the nag extra) and pin it in "
        f"requirements.txt:\n{done.stderr[-3000:]}"
    )


def test_a_module_missing_from_the_install_fails_the_check(monkeypatch):
    """The check can fail: with the recipe that broke the first command (requirements.txt
    without boto3, the checkout installed --no-deps), the synthesis stops on botocore."""
    no_boto = [r for r in requirement_file(REPO_ROOT / "requirements.txt") if r.name != "boto3"]
    monkeypatch.setattr(sys.modules[__name__], "requirement_file", lambda path: no_boto)
    old_recipe = [
        ["pip", "install", "-r", "requirements.txt"],
        ["pip", "install", "--no-deps", "--editable", "."],
    ]
    hidden = hidden_modules(parse_install(old_recipe))
    assert "botocore" in hidden and "boto3" in hidden
    done = synthesize_without(hidden)
    assert done.returncode != 0
    assert "No module named 'botocore' (make synth does not install it)" in done.stderr
