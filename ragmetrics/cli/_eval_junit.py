"""JUnit XML for ``ragmetrics eval --junit-xml``: one testcase per metric.

Per metric, not per sample and metric: the exit code of ``eval`` is decided per metric (its mean
against ``--fail-under``, its unscored samples against ``--max-unscored``), and a testcase per sample
would fail for every sample under the pass mark in a run that exits 0. So a testcase fails exactly when
its metric failed a gate, with the reasons as the failure message, and the suite's failure count is
non-zero exactly when the exit code is 1. The metric's numbers are testcase properties (mean, its 95%
interval, pass rate, scored and total samples, statuses); more properties can be added in
:func:`_properties`. Each judge's canaries (known-answer probes, :mod:`ragmetrics.pipeline.canaries`)
are properties of every testcase too: ``canaries[SPEC].passed`` (true, false, or ``none`` when the
judge gave no reply), ``.probes_passed``, ``.probes`` and ``.calls``.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from typing import Any

from ragmetrics.errors import printable

__all__ = ["render_eval_junit"]


def _properties(agg: Any) -> dict[str, str]:
    values = {
        "mean": agg.mean,
        "ci_low": agg.ci_low,
        "ci_high": agg.ci_high,
        "pass_rate": agg.pass_rate,
        "scored": agg.count,
        "total": agg.total,
    }
    out = {k: (f"{v:.6g}" if isinstance(v, float) else str(v)) for k, v in values.items() if v is not None}
    for status, n in sorted(agg.statuses.items()):
        out[f"status.{status}"] = str(n)
    return out


def _canary_properties(report: Any) -> list[tuple[str, str]]:
    out = []
    for canary in getattr(report, "canaries", []):
        key = f"canaries[{canary.judge}]"
        passed = "none" if not canary.answered else str(canary.passed).lower()
        out += [
            (f"{key}.passed", passed),
            (f"{key}.probes_passed", str(sum(p.passed for p in canary.probes))),
            (f"{key}.probes", str(len(canary.probes))),
            (f"{key}.calls", str(canary.usage.calls)),
        ]
    return out


def render_eval_junit(
    report: Any, failures: Mapping[str, Sequence[str]], *, suite: str = "ragmetrics.evaluation"
) -> str:
    """The JUnit XML text of one ``eval`` run: a testcase per metric, failing when it failed a gate."""
    root = ET.Element("testsuites")
    aggregates = list(report.aggregates.values())
    seconds = f"{report.run.wall_time_s:.3f}"
    node = ET.SubElement(
        root,
        "testsuite",
        name=printable(suite),
        tests=str(len(aggregates)),
        failures=str(sum(1 for a in aggregates if a.name in failures)),
        errors="0",
        skipped="0",
        time=seconds,
    )
    for agg in aggregates:
        case = ET.SubElement(
            node, "testcase", classname=printable(suite), name=printable(agg.name), time=seconds
        )
        props = ET.SubElement(case, "properties")
        for name, value in [*_properties(agg).items(), *_canary_properties(report)]:
            ET.SubElement(props, "property", name=name, value=printable(value))
        if agg.name in failures:
            message = printable("; ".join(failures[agg.name]))
            failure = ET.SubElement(case, "failure", message=message, type="ragmetrics.gate")
            failure.text = message
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
