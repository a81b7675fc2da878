"""The documented import path of YAML/JSON suites: ``from ragmetrics.suite import Suite, run_suite``.

The suites live in :mod:`ragmetrics.regression.suite`; this module only keeps the documented path.
"""

from __future__ import annotations

from ragmetrics.regression.suite import (
    Case,
    CaseOutcome,
    Check,
    Suite,
    SuiteOutcome,
    run_suite,
)

__all__ = [
    "Case",
    "CaseOutcome",
    "Check",
    "Suite",
    "SuiteOutcome",
    "run_suite",
]
