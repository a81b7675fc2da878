"""The judge's health over a run: how much of what it said was found in the texts it was given.

Each claim result carries ``details["judge_health"]`` (spans and quotes checked and found, re-asks;
see ``ragmetrics.metrics.claims.verification``). :class:`HealthTally` sums them per judge over a run,
once per sample, into a :class:`JudgeHealth` per judge spec, carried by the
:class:`~ragmetrics.pipeline.report.Report`. A judge that reads its inputs finds nearly every span and
quote; one that fills the schema without reading finds almost none. :func:`judge_gate` fails a run
whose reading rate is below ``judge_health_min`` (default :data:`JUDGE_HEALTH_MIN`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, model_validator

__all__ = [
    "JUDGE_HEALTH_MIN",
    "TEST_SWITCH",
    "HealthTally",
    "JudgeHealth",
    "judge_gate",
    "judge_gate_message",
]

JUDGE_HEALTH_MIN = 0.5
"""Default gate: a judge whose reading rate is below this fails the run. Measured (the example, the
seven claim metrics, ``benchmarks/judge_health.py``): offline and the fake server's default mode 1.00;
``FakeLLMServer(answer="schema")``, a generic schema filler and SmolLM2-135M on llama-cpp-python (one
row, faithfulness and relevancy) 0.00. A real model that paraphrases a
few spans or quotes loses a few points, not half; a judge below half is not reading."""

_COUNTS = ("spans", "spans_found", "quotes", "quotes_found", "reasks")


class JudgeHealth(BaseModel):
    """One judge over a run: spans and quotes checked and found, verification re-asks."""

    model_config = ConfigDict(extra="forbid")

    judge: str
    """The judge's spec string."""
    samples: int = 0
    """Samples on which this judge's claims were checked."""
    spans: int = 0
    """Claims extracted (answers' and references')."""
    spans_found: int = 0
    """Of them, claims whose span was found in the text they were split from."""
    quotes: int = 0
    """Supported and contradicted verdicts (each quotes the context it cites)."""
    quotes_found: int = 0
    """Of them, verdicts whose quote was found in that context."""
    reasks: int = 0
    """Verification re-asks (a reply whose spans or quotes were not found is re-asked once)."""
    span_rate: float | None = None
    """``spans_found / spans``; None when nothing was extracted."""
    quote_rate: float | None = None
    """``quotes_found / quotes``; None when no verdict quoted anything."""
    reading_rate: float | None = None
    """The lower of the two rates (what the gate reads); None when neither exists."""

    @model_validator(mode="after")
    def _rates(self) -> JudgeHealth:
        self.span_rate = self.spans_found / self.spans if self.spans else None
        self.quote_rate = self.quotes_found / self.quotes if self.quotes else None
        rates = [r for r in (self.span_rate, self.quote_rate) if r is not None]
        self.reading_rate = min(rates) if rates else None
        return self

    def describe(self) -> str:
        """``spans found 11/12 (92%), quotes found 9/9 (100%), 1 verification re-ask``."""

        def share(found: int, total: int) -> str:
            return f"{found}/{total} ({found / total:.0%})" if total else "none checked"

        return (
            f"spans found {share(self.spans_found, self.spans)}, quotes found "
            f"{share(self.quotes_found, self.quotes)}, {self.reasks} verification "
            f"re-ask{'s' if self.reasks != 1 else ''}"
        )

    def low(self, minimum: float = JUDGE_HEALTH_MIN) -> bool:
        """Whether the reading rate is below ``minimum``."""
        return self.reading_rate is not None and self.reading_rate < minimum


class HealthTally:
    """Sums the per-result judge health of a run's records, per judge, one sample at a time."""

    def __init__(self) -> None:
        self._counts: dict[str, dict[str, int]] = {}

    def add(self, results: Iterable[Any]) -> None:
        """Count one record's metric results (``record.results.values()``) in."""
        best: dict[str, Mapping[str, Any]] = {}
        for result in results:
            health = result.details.get("judge_health") if isinstance(result.details, dict) else None
            if not isinstance(health, Mapping) or result.judge is None:
                continue
            spec = result.judge.spec
            seen = best.get(spec)
            if seen is None or _checked(health) > _checked(seen):
                best[spec] = health
        for spec, health in best.items():
            counts = self._counts.setdefault(spec, dict.fromkeys(("samples", *_COUNTS), 0))
            counts["samples"] += 1
            for key in _COUNTS:
                value = health.get(key, 0)
                counts[key] += value if isinstance(value, int) else 0

    def result(self) -> dict[str, JudgeHealth]:
        """The health per judge spec, in the order the judges were first seen."""
        return {spec: JudgeHealth(judge=spec, **counts) for spec, counts in self._counts.items()}


def _checked(health: Mapping[str, Any]) -> int:
    return int(health.get("spans", 0) or 0) + int(health.get("quotes", 0) or 0)


def judge_gate(
    health: Mapping[str, JudgeHealth], minimum: float | None = JUDGE_HEALTH_MIN
) -> list[JudgeHealth]:
    """The judges whose reading rate is below ``minimum`` (None: the gate is off)."""
    if minimum is None:
        return []
    return [h for h in health.values() if h.low(minimum)]


_CLI_SWITCH = "--judge-health-min sets the gate, --no-judge-gate turns it off"
PYTHON_SWITCH = "judge_health_min= sets the gate, judge_health_min=None turns it off"
"""How the Python API's message says to set or turn off the gate (the CLI's names its flags)."""
TEST_SWITCH = (
    "ragmetrics test --judge-health-min (pytest: --ragmetrics-judge-health-min) sets the gate, "
    "--no-judge-gate (--ragmetrics-no-judge-gate) turns it off"
)
"""How an eval case's or suite case's message says to set or turn off the gate."""


def judge_gate_message(failing: Iterable[JudgeHealth], minimum: float, switch: str = _CLI_SWITCH) -> str:
    """One line per judge that is plainly not reading its inputs, naming the figures and what to check."""
    lines = []
    for h in failing:
        lines.append(
            f"the judge {h.judge} is not reading its inputs: {h.describe()} over {h.samples} sample"
            f"{'s' if h.samples != 1 else ''} (reading rate {h.reading_rate:.0%} < {minimum:.0%}). Its "
            "claims and quotes are not in the answers and contexts it was given, so its scores mean "
            "nothing. Check the model name and base URL (a gateway or proxy may route to another model), "
            "that the model follows instructions (tiny local models often only fill the JSON schema), and "
            f"that structured output is not constrained without the prompt; {switch}."
        )
    return "\n".join(lines)
