"""Errors raised by the CdcChecks rule pack."""

from __future__ import annotations


class CdcChecksError(RuntimeError):
    """CdcChecks was used in a way it cannot work, e.g. before the app was synthesized.

    It is raised inside cdk-nag's tree walk, so it crosses jsii: it reaches the caller of
    ``validate_scope`` as a ``RuntimeError`` with this message, and during synthesis it is
    recorded as the plugin's failure in the validation report.
    """
