"""Errors raised by the CdcChecks rule pack."""

from __future__ import annotations


class CdcChecksError(Exception):
    """CdcChecks was used in a way it cannot work, e.g. before the app was synthesized."""
