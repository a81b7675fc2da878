"""The claim metrics over every assistant turn of a conversation: one result per turn and metric.

:func:`evaluate_turns` reads each turn as a sample
(:func:`~ragmetrics.metrics.conversation.turns.turn_sample`) and runs the claim metrics on it
unchanged, their judges shared as the pipeline shares them, so the three core metrics cost 2 calls
per turn. Each result says which message every claim's evidence cites (``details["cited"]``), where
each context came from (``details["sources"]``) and what the history budget cut
(``details["history"]``). A turn that fails (bad input, a judge failure) is a status on that turn;
the others finish.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

from ragmetrics.errors import ConfigError, InvalidInputError
from ragmetrics.metrics.claims.metric import ClaimMetric, share_tasks
from ragmetrics.metrics.conversation.turns import DEFAULT_HISTORY_BUDGET_TOKENS, EvidenceMap, turn_sample
from ragmetrics.sample import Conversation, Sample, Turn
from ragmetrics.score import MetricResult, Status

__all__ = ["ConversationClaims", "TurnResult", "evaluate_turns", "share_claim_judges"]


@dataclass(frozen=True, slots=True)
class TurnResult:
    """The claim metrics' results on one assistant turn."""

    turn: Turn
    sample: Sample | None
    """The turn read as a sample; None when it could not be (``invalid_input``)."""
    evidence: EvidenceMap | None
    """Where each of the sample's contexts came from; None with the sample."""
    results: dict[str, MetricResult] = field(default_factory=dict)
    """Per metric name, its result on this turn."""
    status: Status = "ok"
    """``ok`` when every metric's status is; else the first other status, in metric order."""
    message: str | None = None
    """Why the status is not ``ok``."""

    @property
    def index(self) -> int:
        """The assistant message's index in ``Conversation.messages``."""
        return self.turn.index

    @property
    def scores(self) -> dict[str, float | None]:
        """Per metric name, its score (None: no score, see its status)."""
        return {name: r.score for name, r in self.results.items()}


@dataclass(frozen=True, slots=True)
class ConversationClaims:
    """The claim metrics' results on every assistant turn of one conversation, in turn order."""

    conversation: Conversation
    turns: tuple[TurnResult, ...]

    def scores(self, metric: str) -> list[float | None]:
        """One metric's score per turn (None where the turn has none)."""
        return [t.results[metric].score if metric in t.results else None for t in self.turns]


def share_claim_judges(metrics: Sequence[ClaimMetric]) -> None:
    """Give claim metrics with equal ``judge_key()`` one judge and one merged task (as the pipeline does).

    Their requests on a turn are then the same, and the caching judge makes each once.
    """
    first: dict[Any, ClaimMetric] = {}
    for metric in metrics:
        owner = first.setdefault(metric.judge_key(), metric)
        if owner is not metric:
            metric.use_judge(owner.judge)
    share_tasks(metrics)


async def evaluate_turns(
    conversation: Conversation,
    metrics: Sequence[ClaimMetric],
    *,
    retrieval_tools: Collection[str] | None = None,
    history_budget_tokens: int = DEFAULT_HISTORY_BUDGET_TOKENS,
    repeat: int = 0,
) -> ConversationClaims:
    """Run claim metrics on every assistant message with text, each as the answer to its user turn.

    Args:
        conversation: The conversation.
        metrics: Claim metric objects (``FaithfulnessMetric(llm=...)``, ``RelevancyMetric``...). Those
            naming the same judge are given one judge and one merged task (see
            :func:`share_claim_judges`); the judges are not closed here.
        retrieval_tools: The tool names whose results are evidence; None: every tool's.
        history_budget_tokens: Estimated tokens of history per turn (see
            :func:`~ragmetrics.metrics.conversation.turns.turn_evidence`).
        repeat: The repeat index, passed to each metric (a new repeat asks the judge anew).

    Returns:
        One :class:`TurnResult` per turn. A turn with no user message before it gets ``invalid_input``
        from every metric, naming ``messages[i]``; a judge failure on one turn is that turn's status.

    Raises:
        ConfigError: A metric is not a claim metric, or two metrics share a name.
    """
    checked = _check_metrics(metrics)
    share_claim_judges(checked)
    turns = conversation.turns()
    done = await asyncio.gather(
        *(
            _one_turn(conversation, turn, checked, retrieval_tools, history_budget_tokens, repeat)
            for turn in turns
        )
    )
    return ConversationClaims(conversation, tuple(done))


def _check_metrics(metrics: Sequence[ClaimMetric]) -> list[ClaimMetric]:
    if isinstance(metrics, ClaimMetric) or not isinstance(metrics, Sequence):
        raise ConfigError("evaluate_turns takes a list of claim metrics (FaithfulnessMetric(...), ...)")
    seen: set[str] = set()
    for metric in metrics:
        if not isinstance(metric, ClaimMetric):
            raise ConfigError(
                f"evaluate_turns runs claim metrics (faithfulness, relevancy, groundedness...), "
                f"got {type(metric).__name__}"
            )
        if metric.name in seen:
            raise ConfigError(f"two metrics are named '{metric.name}'; give each turn's results one per name")
        seen.add(metric.name)
    return list(metrics)


async def _one_turn(
    conversation: Conversation,
    turn: Turn,
    metrics: list[ClaimMetric],
    retrieval_tools: Collection[str] | None,
    budget: int,
    repeat: int,
) -> TurnResult:
    try:
        sample, mapped = turn_sample(
            conversation, turn, retrieval_tools=retrieval_tools, history_budget_tokens=budget
        )
    except InvalidInputError as exc:
        results = {
            m.name: MetricResult(
                name=m.name,
                score=None,
                threshold=m.threshold,
                status="invalid_input",
                message=str(exc),
                reasoning=f"No score: {exc}",
            )
            for m in metrics
        }
        return TurnResult(turn, None, None, results, "invalid_input", str(exc))
    got = await asyncio.gather(*(m.evaluate_sample(sample, repeat=repeat) for m in metrics))
    results = {m.name: _cited(r, mapped) for m, r in zip(metrics, got, strict=True)}
    failed = next((r for r in results.values() if r.status != "ok"), None)
    if failed is None:
        return TurnResult(turn, sample, mapped, results)
    return TurnResult(turn, sample, mapped, results, failed.status, f"{failed.name}: {failed.message}")


def _cited(result: MetricResult, mapped: EvidenceMap) -> MetricResult:
    """The result with the message each claim's evidence cites, the context sources and the history cut."""
    cited = [
        {
            "claim": i,
            "source": mapped.source(claim.context_index),
            "message": mapped.message_index(claim.context_index),
            "kind": mapped.evidence[claim.context_index].kind,  # type: ignore[index]
            "evidence_verified": claim.evidence_verified,
        }
        for i, claim in enumerate(result.claims)
        if mapped.source(claim.context_index) is not None
    ]
    details = {
        **result.details,
        "cited": cited,
        "sources": list(mapped.sources),
        "history": mapped.history.as_details(),
        "turn": {"number": mapped.turn.number, "message": mapped.turn.index},
    }
    return result.model_copy(update={"details": details})
