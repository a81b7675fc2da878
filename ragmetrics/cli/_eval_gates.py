"""The gates of ``ragmetrics eval``: per-metric pass marks and mean floors, and which metric failed why.

``--threshold`` and ``--fail-under`` take one number for every metric (``0.8``), one per metric
(``faithfulness=0.8,relevancy=0.6``), or both (``0.5,faithfulness=0.8``: 0.8 for faithfulness, 0.5 for
the others). A metric may be named by another tool's name (``answer_relevancy``). :func:`gate_failures`
gives, per metric, the reasons it failed, so the exit code, the stderr lines and the JUnit testcases
(:mod:`ragmetrics.cli._eval_junit`) all come from one list.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ragmetrics.cli._args import unit_float

__all__ = ["MetricValues", "gate_exit_code", "gate_failures", "metric_values", "run_gates"]


@dataclass(frozen=True, slots=True)
class MetricValues:
    """A number for every metric, and numbers for some by name."""

    default: float | None = None
    by_metric: Mapping[str, float] = field(default_factory=dict)

    def of(self, metric: str) -> float | None:
        """The value for ``metric``."""
        return self.by_metric.get(metric, self.default)

    def unknown(self, names: Iterable[str]) -> list[str]:
        """The metrics named here that are not among ``names``."""
        known = set(names)
        return sorted(m for m in self.by_metric if m not in known)


def metric_values(text: str) -> MetricValues:
    """``0.8``, ``faithfulness=0.8,relevancy=0.6`` or ``0.5,faithfulness=0.8`` (argparse type)."""
    from ragmetrics.metrics.aliases import canonical_metric_name

    default: float | None = None
    by_metric: dict[str, float] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, sep, value = part.partition("=")
        if not sep:
            if default is not None:
                raise argparse.ArgumentTypeError(f"two numbers for every metric in {text!r}")
            default = unit_float(part)
            continue
        if not name.strip() or not value.strip():
            raise argparse.ArgumentTypeError(f"expected METRIC=SCORE, got {part!r}")
        by_metric[canonical_metric_name(name.strip())] = unit_float(value.strip())
    if default is None and not by_metric:
        raise argparse.ArgumentTypeError("expected a SCORE or METRIC=SCORE[,METRIC=SCORE...]")
    return MetricValues(default, by_metric)


def gate_failures(
    report: Any, *, fail_under: MetricValues | None, unscored: Iterable[Any]
) -> dict[str, list[str]]:
    """Metric -> why it failed the run's gates (absent: it passed), in the report's metric order.

    Args:
        report: The run's :class:`~ragmetrics.pipeline.report.Report`.
        fail_under: The ``--fail-under`` floors of the means, or None.
        unscored: The :class:`~ragmetrics.pipeline.gate.UnscoredFailure` list of the unscored rule.
    """
    reasons: dict[str, list[str]] = {}
    for failure in unscored:
        reasons.setdefault(failure.metric, []).append(str(failure))
    for agg in report.aggregates.values():
        floor = fail_under.of(agg.name) if fail_under is not None else None
        if floor is not None and agg.mean is not None and agg.mean < floor:  # no mean: unscored above
            reasons.setdefault(agg.name, []).append(f"mean {agg.mean:.4f} is below --fail-under {floor:g}")
    return {name: reasons[name] for name in report.aggregates if name in reasons}


def run_gates(
    report: Any,
    *,
    fail_under: MetricValues | None,
    max_unscored: Any,
    junit_xml: str | None,
    say: Callable[[str], None],
) -> dict[str, list[str]]:
    """Apply the gates: one line through ``say`` per kind of failure, the JUnit file; the failures.

    A run fails (exit 1) exactly when this is non-empty, and the JUnit XML has one failing testcase
    per metric in it.
    """
    from ragmetrics.pipeline.gate import check_unscored, unscored_message

    unscored = check_unscored(report, max_unscored=max_unscored)
    if unscored:
        say(unscored_message(unscored))
    failed = gate_failures(report, fail_under=fail_under, unscored=unscored)
    low = [
        f"{name} ({reason.removeprefix('mean ').replace(' is below --fail-under ', ' < ')})"
        for name, reasons in failed.items()
        for reason in reasons
        if "--fail-under" in reason
    ]
    if low:
        say(f"below --fail-under: {', '.join(low)}")
    if junit_xml:
        from ragmetrics.cli._eval_junit import render_eval_junit
        from ragmetrics.regression.snapshot import write_atomic

        write_atomic(junit_xml, render_eval_junit(report, failed))
    return failed


def gate_exit_code(
    args: argparse.Namespace, report: Any, max_unscored: Any, *, say: Callable[[str], None]
) -> str:
    """Which gate decides the exit: ``"judge"`` (a judge is not reading: 5), ``"gate"`` (1) or ``"ok"``.

    The judge gate is reported first (no score of such a judge means anything); each failure is one line
    through ``say`` and a failing testcase in ``--junit-xml``.
    """
    from ragmetrics.pipeline.judge_health import JUDGE_HEALTH_MIN, judge_gate, judge_gate_message

    minimum = JUDGE_HEALTH_MIN if args.judge_health_min is None else args.judge_health_min
    if args.no_judge_gate:
        minimum = None
    unread = judge_gate(report.judge_health, minimum)
    if unread and minimum is not None:
        say(f"ragmetrics eval: {judge_gate_message(unread, minimum)}")
    failed = run_gates(
        report,
        fail_under=args.fail_under,
        max_unscored=max_unscored,
        junit_xml=args.junit_xml,
        say=lambda line: say(f"ragmetrics eval: {line}"),
    )
    if unread:
        return "judge"
    return "gate" if failed else "ok"
