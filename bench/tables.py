"""Markdown tables for bench/RESULTS.md (bench/report.py and the sections' own reports)."""

from __future__ import annotations

from typing import Any


def yes(flag: bool) -> str:
    return "yes" if flag else "**no**"


def fmt(value: Any, digits: int = 3) -> str:
    """A cell: ``-`` for None, floats with ``digits`` decimals."""
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def table(header: list[str], rows: list[list[Any]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(fmt(cell) for cell in row) + " |" for row in rows]
    return lines
