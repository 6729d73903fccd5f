"""Render the site's diagrams: each docs/diagrams/NAME.dot (Graphviz) to NAME.svg beside it,
committed, so the site needs neither a browser-side renderer nor the network (`make diagrams`;
Graphviz's `dot`: the Debian package graphviz). Each SVG records the SHA-256 of the source it
was rendered from; tests/docs/test_site.py fails when a .dot changed and its SVG was not
re-rendered."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

DIAGRAMS = Path(__file__).resolve().parents[1] / "diagrams"


def source_stamp(source: Path) -> str:
    """The comment an SVG rendered from ``source`` carries."""
    digest = hashlib.sha256(source.read_bytes()).hexdigest()
    return f"<!-- rendered from {source.name} sha256:{digest} -->"


def render(source: Path) -> Path:
    svg = subprocess.run(
        ["dot", "-Tsvg", str(source)], check=True, capture_output=True, text=True
    ).stdout
    declaration, _, rest = svg.partition("\n")
    target = source.with_suffix(".svg")
    target.write_text(f"{declaration}\n{source_stamp(source)}\n{rest}")
    return target


def main() -> int:
    for source in sorted(DIAGRAMS.glob("*.dot")):
        print(render(source).relative_to(DIAGRAMS.parents[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
